//go:build unix

package service

import (
	"fmt"
	"syscall"
)

// openFilesLimit is the process's soft RLIMIT_NOFILE: how many descriptors
// it may hold. (On Linux and macOS the Go runtime raises the soft limit to
// the hard one when the process starts, so this is usually the hard limit
// the process was started with.)
func openFilesLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("start: reading the open-files limit: %w", err)
	}
	return uint64(r.Cur), nil
}
