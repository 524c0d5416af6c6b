//go:build unix && !linux

package spawn

import (
	"os/exec"
	"syscall"
)

// Signals Stop, Kill and SetStopped send besides SIGKILL and SIGTERM.
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// setAttrs gives cmd a process group of its own with group; this system
// has no parent-death signal.
func setAttrs(cmd *exec.Cmd, group bool) error {
	if group {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	return nil
}

// signalGroup sends sig to the process group that pid leads.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// State reports ErrUnsupported: this system has no /proc/<pid>/stat.
func State(pid int) (byte, error) { return 0, ErrUnsupported }
