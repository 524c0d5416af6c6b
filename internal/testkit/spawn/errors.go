package spawn

import "errors"

var (
	// ErrExited reports a signal to a child that has already been reaped.
	ErrExited = errors.New("spawn: process has exited")
	// ErrTimeout reports a wait that ran out before the child did what was
	// waited for: exit (Wait, Stop), be reaped (Kill), stop or continue
	// (SetStopped).
	ErrTimeout = errors.New("spawn: timed out")
	// ErrUnsupported reports what this operating system cannot do: read a
	// process's state, or start a process group outside Unix.
	ErrUnsupported = errors.New("spawn: not supported on this system")
)
