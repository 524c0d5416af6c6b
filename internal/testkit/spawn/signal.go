package spawn

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Signal sends sig to the child (not to its group). A child already
// reaped reports ErrExited.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return p.exitedError()
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return p.exitedError()
		}
		return fmt.Errorf("spawn: signal %s (pid %d): %w", p.name, p.Pid(), err)
	}
	return nil
}

// exitedError is ErrExited with the child's name and exit status.
func (p *Proc) exitedError() error {
	return fmt.Errorf("spawn: %s has exited (%v): %w", p.name, p.Err(), ErrExited)
}

// Wait waits up to d for Done. It reports ErrTimeout if the child is still
// there, and nothing about how it exited (Err does).
func (p *Proc) Wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("spawn: %s (pid %d) still running after %v: %w", p.name, p.Pid(), d, ErrTimeout)
	}
}

// Kill crashes the child: SIGKILL (to its group with Config.Group), then
// SIGCONT, so that a stopped child dies without running again, and waits
// up to Config.ReapTimeout for it to be reaped (ErrTimeout if it is not).
// Killing a child that has exited does nothing.
func (p *Proc) Kill() error {
	if p.Exited() {
		return nil
	}
	if err := p.signalAll(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("spawn: kill %s (pid %d): %w", p.name, p.Pid(), err)
	}
	p.signalAll(sigCont)
	t := time.NewTimer(p.cfg.ReapTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("spawn: %s (pid %d) not reaped %v after SIGKILL: %w", p.name, p.Pid(), p.cfg.ReapTimeout, ErrTimeout)
	}
}

// Stop asks the child to end — SIGCONT, so a stopped child can act on it,
// then SIGTERM (to its group with Config.Group) — and waits up to grace
// for it. A child that ends in time with a failure reports its status and
// the tail of its standard error; one that does not is killed and reports
// ErrTimeout. Stopping a child that has exited does nothing.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	p.signalAll(sigCont)
	p.signalAll(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("spawn: %s: %w; stderr: %s", p.name, p.err, p.Tail())
		}
		return nil
	case <-t.C:
		if err := p.Kill(); err != nil {
			return err
		}
		return fmt.Errorf("spawn: %s did not stop within %v of SIGTERM; killed: %w", p.name, grace, ErrTimeout)
	}
}

// SetStopped sends SIGSTOP (stop true) or SIGCONT to the child and waits
// up to timeout until the kernel reports it stopped, or no longer
// stopped. A child that is gone reports ErrExited; one still in the other
// state, ErrTimeout.
func (p *Proc) SetStopped(stop bool, timeout time.Duration) error {
	sig, verb := sigCont, "resume"
	if stop {
		sig, verb = sigStop, "stop"
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := p.Stopped()
		if errors.Is(err, ErrUnsupported) {
			return err
		}
		if err != nil || p.Exited() {
			return p.exitedError()
		}
		if stopped == stop {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("spawn: %s %s (pid %d): stopped=%v after %v: %w", verb, p.name, p.Pid(), stopped, timeout, ErrTimeout)
		}
		time.Sleep(time.Millisecond) // poll: only the kernel can deliver the signal
	}
}

// Stopped reports whether the kernel shows the child in the stopped state
// (SIGSTOP). A child that is gone reports an error; so does a system
// without /proc (ErrUnsupported).
func (p *Proc) Stopped() (bool, error) {
	state, err := State(p.Pid())
	if err != nil {
		return false, err
	}
	return state == 'T', nil
}

// signalAll sends sig to the child's group with Config.Group, else to the
// child.
func (p *Proc) signalAll(sig syscall.Signal) error {
	if p.cfg.Group {
		return signalGroup(p.Pid(), sig)
	}
	return p.cmd.Process.Signal(sig)
}
