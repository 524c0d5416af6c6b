//go:build linux

package etcdproc

import (
	"context"
	"fmt"
)

// running returns member i's process if it runs, ErrNotRunning otherwise.
func (c *Cluster) running(op string, i int) (*proc, error) {
	if err := c.check(i); err != nil {
		return nil, fmt.Errorf("etcdproc: %s: %w", op, err)
	}
	p := c.proc(i)
	if p == nil || !p.running() {
		return nil, fmt.Errorf("etcdproc: %s(%d): %w", op, i, ErrNotRunning)
	}
	return p, nil
}

// Kill crashes member i: SIGKILL (then SIGCONT, should it be paused, so a
// paused member dies without running again) and waits until the process is
// reaped. Its data directory stays for Restart. Killing a member that is
// not running reports ErrNotRunning.
func (c *Cluster) Kill(i int) error {
	p, err := c.running("Kill", i)
	if err != nil {
		return err
	}
	err = p.kill()
	c.mu.Lock()
	c.members[i].paused = false
	c.mu.Unlock()
	return err
}

// Restart starts member i again on its data directory and URLs and waits
// until it is ready, which takes a quorum of running members: it has then
// rejoined the cluster and applied everything committed before it started.
// If ctx (or Config.Timeout) ends first, Restart returns the error and
// leaves the member running, to become ready once a quorum forms. A member
// that is running reports ErrRunning; one that exits, an *ExitError.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.check(i); err != nil {
		return fmt.Errorf("etcdproc: Restart: %w", err)
	}
	p, err := c.launch(i, "existing")
	if err != nil {
		return fmt.Errorf("etcdproc: Restart(%d): %w", i, err)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := p.waitReady(ctx); err != nil {
		return fmt.Errorf("etcdproc: Restart(%d): %w", i, err)
	}
	return nil
}

// Pause freezes member i with SIGSTOP and returns once the kernel reports
// it stopped: its sockets stay open but it answers nobody, as a member
// stalled by a long GC pause or a frozen VM. Pausing a paused member
// reports ErrPaused; one that is not running, ErrNotRunning.
func (c *Cluster) Pause(i int) error {
	p, err := c.running("Pause", i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.members[i].paused {
		c.mu.Unlock()
		return fmt.Errorf("etcdproc: Pause(%d): %w", i, ErrPaused)
	}
	c.members[i].paused = true
	c.mu.Unlock()
	return p.setStopped(true)
}

// Resume lets paused member i run again (SIGCONT) and returns once the
// kernel reports it no longer stopped. Resuming a member that is not
// paused reports ErrNotPaused.
func (c *Cluster) Resume(i int) error {
	p, err := c.running("Resume", i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if !c.members[i].paused {
		c.mu.Unlock()
		return fmt.Errorf("etcdproc: Resume(%d): %w", i, ErrNotPaused)
	}
	c.members[i].paused = false
	c.mu.Unlock()
	return p.setStopped(false)
}
