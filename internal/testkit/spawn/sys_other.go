//go:build !unix

package spawn

import (
	"os/exec"
	"syscall"
)

// This system has no stop and continue signals: Kill and Stop send none,
// and SetStopped's signal fails.
const (
	sigStop = syscall.Signal(-1)
	sigCont = syscall.Signal(-1)
)

// setAttrs refuses a process group; this system has no parent-death
// signal.
func setAttrs(cmd *exec.Cmd, group bool) error {
	if group {
		return ErrUnsupported
	}
	return nil
}

// signalGroup is never called: Start refuses Config.Group here.
func signalGroup(pid int, sig syscall.Signal) error { return ErrUnsupported }

// State reports ErrUnsupported: this system has no /proc/<pid>/stat.
func State(pid int) (byte, error) { return 0, ErrUnsupported }
