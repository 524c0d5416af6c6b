package etcdproc

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the Cluster methods, matched with errors.Is.
var (
	// ErrNoMember means a member index outside [0, Size).
	ErrNoMember = errors.New("etcdproc: no such member")
	// ErrNotRunning means the member's process is not running (it was
	// killed, or exited on its own).
	ErrNotRunning = errors.New("etcdproc: member not running")
	// ErrRunning means the member's process is already running.
	ErrRunning = errors.New("etcdproc: member already running")
	// ErrPaused means the member is already paused.
	ErrPaused = errors.New("etcdproc: member already paused")
	// ErrNotPaused means the member is not paused.
	ErrNotPaused = errors.New("etcdproc: member not paused")
)

// An ExitError reports a member process that exited when it should have
// been serving: before it was ready, or while the harness waited for it.
type ExitError struct {
	// Member is the member's name ("m0", "m1", …).
	Member string
	// Err is the process's exit status (from exec.Cmd.Wait).
	Err error
	// Stderr is the end of what the process wrote to stderr (its last
	// 8 KiB), where MemberMain reports why it failed.
	Stderr string
}

// Error describes the exit and the end of the member's stderr.
func (e *ExitError) Error() string {
	return fmt.Sprintf("etcdproc: member %s exited: %v; stderr: %s",
		e.Member, e.Err, strings.TrimSpace(e.Stderr))
}

// Unwrap returns the exit status.
func (e *ExitError) Unwrap() error { return e.Err }

// AddrInUse reports whether the member failed because another process held
// one of its ports.
func (e *ExitError) AddrInUse() bool {
	return strings.Contains(e.Stderr, "address already in use")
}
