package chaos

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/snowfence/snowfence/internal/syncbuf"
)

// proc is one child process of the harness: an etcd member, a snowfence
// serve or a library holder.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncbuf.Tail
	done   chan struct{} // closed once the process is reaped
	err    error         // its exit status, once done
}

// startProc starts cmd. onStdout reads the child's standard output until
// it ends; the process is reaped after that. Every child dies with the
// harness (Pdeathsig), so a crashed harness leaves no holder behind.
func startProc(name string, cmd *exec.Cmd, onStdout func(io.Reader)) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &proc{name: name, cmd: cmd, stderr: &syncbuf.Tail{Limit: 16 << 10}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		onStdout(out)
		io.Copy(io.Discard, out)
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig unless the process has ended.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return fmt.Errorf("%s has exited: %v", p.name, p.err)
	}
	return p.cmd.Process.Signal(sig)
}

// kill crashes the process (SIGKILL) and reaps it.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to stop (SIGCONT, then SIGTERM) and kills it if it
// has not within grace.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		var ee *exec.ExitError
		if p.err != nil && !(errors.As(p.err, &ee) && ee.ExitCode() == 0) {
			return fmt.Errorf("%s: %v; stderr: %s", p.name, p.err, p.stderr.String())
		}
		return nil
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.name, grace)
	}
}
