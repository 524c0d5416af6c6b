package perimeter

import (
	"os"
	"time"
)

// fingerprint is what the perimeter compares to decide that a file changed:
// its size, modification time and file identity (device and inode) after
// following symbolic links.
//
// Why polling stat and not inotify (github.com/fsnotify/fsnotify): the
// files are small and few, a stat of each every few seconds costs nothing,
// and stat sees every way a file is replaced — written in place, renamed
// over (editors, config management) or swapped as Kubernetes updates a
// mounted Secret, by retargeting the "..data" symbolic link to a new
// directory. An inotify watch is on an inode: it misses that swap unless
// the watcher re-adds watches on the right parent directories in the right
// order, and it sees nothing on NFS and several FUSE filesystems. The cost
// of polling is latency: a change is seen within one poll interval.
type fingerprint struct {
	size    int64
	modTime time.Time
	dev     uint64
	ino     uint64
	missing bool // the file could not be stat'ed
}

// stat fingerprints path; an unreadable path yields a "missing"
// fingerprint, distinct from every real one and equal to another missing
// one (so a file that stays missing is reported once, not every poll).
func stat(path string) fingerprint {
	fi, err := os.Stat(path)
	if err != nil {
		return fingerprint{missing: true}
	}
	f := fingerprint{size: fi.Size(), modTime: fi.ModTime()}
	f.dev, f.ino = fileID(fi)
	return f
}

// stats fingerprints each path.
func stats(paths []string) []fingerprint {
	fs := make([]fingerprint, len(paths))
	for i, p := range paths {
		fs[i] = stat(p)
	}
	return fs
}

func sameFingerprints(a, b []fingerprint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if a[i].missing != b[i].missing || a[i].size != b[i].size || !a[i].modTime.Equal(b[i].modTime) || a[i].dev != b[i].dev || a[i].ino != b[i].ino {
			return false
		}
	}
	return true
}
