//go:build !unix

package embedetcd

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens <dir>/snowfence.lock; this platform has no flock, so a
// second embedded etcd on the same directory is stopped by etcd's own lock
// (which waits rather than fails).
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: lock %s: %w", path, err)
	}
	return f, nil
}
