package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A Copy is a cold copy of every server's data directory (CopyData).
type Copy struct {
	dir string
}

// CopyData copies every server's data directory aside while all are
// stopped (it fails the test otherwise: a copy of a running server is not
// one the restore tests mean), as a cold backup is taken.
func (e *Ensemble) CopyData() *Copy {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mustAllStopped("copy")
	c := &Copy{dir: e.t.TempDir()}
	for _, s := range e.servers {
		if err := copyTree(s.dataDir, filepath.Join(c.dir, strconv.Itoa(s.id))); err != nil {
			e.t.Fatalf("zktest: copy the data of server %d: %v", s.id, err)
		}
	}
	return c
}

// Remove deletes the copy's files (they go with the test's temporary
// directory anyway): for a test that takes many copies and keeps only the
// last.
func (c *Copy) Remove() error { return os.RemoveAll(c.dir) }

// Restore puts c back as every server's data directory, in place of what
// is there, while all are stopped: the restore of a backup. Start them
// again with StartAll.
func (e *Ensemble) Restore(c *Copy) {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mustAllStopped("restore")
	for _, s := range e.servers {
		if err := os.RemoveAll(s.dataDir); err != nil {
			e.t.Fatalf("zktest: remove the data of server %d: %v", s.id, err)
		}
		if err := copyTree(filepath.Join(c.dir, strconv.Itoa(s.id)), s.dataDir); err != nil {
			e.t.Fatalf("zktest: restore the data of server %d: %v", s.id, err)
		}
	}
}

// mustAllStopped fails the test unless every server is stopped. Called
// with e.mu held.
func (e *Ensemble) mustAllStopped(what string) {
	e.t.Helper()
	for _, s := range e.servers {
		if s.proc != nil {
			e.t.Fatalf("zktest: %s the data while server %d runs: stop every server first (StopAll)", what, s.id)
		}
	}
}

// copyTree copies directory src to dst (regular files and directories).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
		return fmt.Errorf("%s is neither a file nor a directory", p)
	})
}
