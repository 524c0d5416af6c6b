package spawn

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Signals Stop, Kill and SetStopped send besides SIGKILL and SIGTERM.
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// setAttrs gives cmd a parent-death signal of SIGKILL unless it has one,
// and a process group of its own with group.
func setAttrs(cmd *exec.Cmd, group bool) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if group {
		cmd.SysProcAttr.Setpgid = true
	}
	return nil
}

// signalGroup sends sig to the process group that pid leads.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// State is the state letter of process pid in /proc/<pid>/stat: 'R'
// running, 'S' sleeping, 'T' stopped, 'Z' a zombie, …
func State(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces; the state follows it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("spawn: unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}
