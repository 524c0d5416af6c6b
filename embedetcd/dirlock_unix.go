//go:build unix

package embedetcd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on <dir>/snowfence.lock without waiting,
// so a second embedded etcd on a directory in use fails at once (etcd's own
// database lock would make it wait forever). The lock is released by
// closing the returned file, or when the process exits.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedetcd: %s is in use by another embedded etcd (locked %s); "+
				"stop it, or reach it through the URL in %s: %w", dir, path, filepath.Join(dir, ClientURLFile), ErrDirInUse)
		}
		return nil, fmt.Errorf("embedetcd: lock %s: %w", path, err)
	}
	return f, nil
}
