package perimeter

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The most the perimeter reads of one file. A file larger than its cap is
// refused (the last good configuration stays), never read further: a
// callers file replaced by a symbolic link to an endless source, or
// written without end, must not grow the process.
const (
	// MaxPEMFileSize caps the certificate chain, the key and the client-CA
	// bundle: 1 MiB. The largest legitimate one is a CA bundle, and the
	// whole Mozilla root store (what /etc/ssl/certs/ca-certificates.crt
	// holds, about 145 CAs) is about 215 KiB; a chain or a key is a few
	// KiB.
	MaxPEMFileSize = 1 << 20
	// MaxCallersFileSize caps the callers file: 4 MiB, some 40,000 callers
	// at 100 bytes each (an identity may take up to 2,048). Every listed
	// caller is a metric series of its own on three counters, so a file
	// near the cap is already far past what /metrics serves comfortably.
	MaxCallersFileSize = 4 << 20
)

// ErrNotRegularFile is wrapped by the refusal of a configured path that is,
// after following symbolic links, not a regular file: a named pipe (whose
// open or read would wait for a writer for ever), a device such as
// /dev/zero (endless), a directory or a socket.
var ErrNotRegularFile = errors.New("perimeter: not a regular file")

// ErrFileTooLarge is wrapped by the refusal of a file larger than its cap
// (MaxPEMFileSize, MaxCallersFileSize).
var ErrFileTooLarge = errors.New("perimeter: file too large")

// readRegular reads the regular file at path, at most limit bytes of it.
// Symbolic links are followed (a Kubernetes Secret's "..data" swap, a
// link to the current version of a file); what they lead to must be a
// regular file, judged before the open and again on the opened descriptor
// (fstat), so no swap between a check and the read can slip another kind
// of file in. The open is non-blocking, so opening a named pipe returns at
// once (to be refused) rather than waiting for a writer, and takes no
// controlling terminal; reads of a regular file are unaffected.
//
// Why poll, reading every file each period, and not inotify
// (github.com/fsnotify/fsnotify): the files are small and few, and a read
// sees every way a file is replaced — written in place (even keeping its
// size and modification time), renamed over (editors, configuration
// management) or swapped as Kubernetes updates a mounted Secret, by
// retargeting the "..data" symbolic link to a new directory. An inotify
// watch is on an inode: it misses that swap unless the watcher re-adds
// watches on the right parent directories in the right order, and it sees
// nothing on NFS and several FUSE filesystems. The cost of polling is
// latency (a change is seen within one period) and a read of each file
// per period: a few KiB, or some hundreds for a large CA bundle, hashed
// (SHA-256) and compared with the last; only a changed file is parsed.
func readRegular(path string, limit int64) ([]byte, error) {
	// A first look, so that a device is not even opened (opening some has
	// effects of their own); the check that counts is readOpened's, on the
	// descriptor, which no swap after this one can get around.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, limit); err != nil {
		return nil, err
	}
	return readOpened(path, limit)
}

// readOpened opens path (non-blocking, so a named pipe swapped in since
// the first look cannot block it), checks the descriptor's kind and size,
// and reads it.
func readOpened(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, limit); err != nil {
		return nil, err
	}
	return readLimited(f, path, limit)
}

// regular refuses fi, path's, unless it is a regular file of at most
// limit bytes.
func regular(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is %s; point the flag at a regular file (a symbolic link to one is fine)", ErrNotRegularFile, path, kindOf(fi.Mode()))
	}
	if fi.Size() > limit {
		return tooLarge(path, limit)
	}
	return nil
}

// readLimited reads r to its end, refusing it once it has given more than
// limit bytes: a regular file's size may grow between the fstat and the
// read, and some (under /proc, on some FUSE filesystems) report none.
// It reads at most limit+1 bytes.
func readLimited(r io.Reader, path string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit)
	}
	return b, nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%w: %s is larger than the %d KiB allowed; a legitimate file is far smaller (is it the right file?)", ErrFileTooLarge, path, limit>>10)
}

// kindOf names a file mode that is not a regular file's.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	default:
		return fmt.Sprintf("not a regular file (mode %s)", m)
	}
}

// digest is what the perimeter compares to decide that a file changed:
// the SHA-256 of its bytes, or the error that reading it gave ("!" and
// the message: a file that stays missing, or stays a FIFO, is reported
// once, not every period).
func digest(b []byte, err error) string {
	if err != nil {
		return "!" + err.Error()
	}
	s := sha256.Sum256(b)
	return string(s[:])
}
