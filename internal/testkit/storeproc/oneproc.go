package storeproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// startOnFreePort tries up to five free loopback ports, as another
// process may take one between its pick and the server's start: use takes
// the port (its error ends the tries), start starts the server on it. If
// no try starts it, the server's directory dir is removed.
func startOnFreePort(dir string, use func(port int) error, start func() error) error {
	var lastErr error
	for range 5 {
		ports, err := freeport.Loopback(1)
		if err != nil {
			os.RemoveAll(dir)
			return err
		}
		if lastErr = use(ports[0]); lastErr != nil {
			break
		}
		if lastErr = start(); lastErr == nil {
			return nil
		}
	}
	os.RemoveAll(dir)
	return lastErr
}

// oneProc is a server that is one process (dynalite's node, ZooKeeper's
// JVM), started again on its data after a crash: its current process and
// the signals the faults send it. Dynalite and ZooKeeper embed it; each
// keeps its own command line and its own test of serving (await).
type oneProc struct {
	name string // in errors and process names: "dynalite", "zookeeper"

	mu     sync.Mutex
	p      *spawn.Proc
	starts int
}

// running reports whether the process runs; the caller holds mu.
func (o *oneProc) running() bool { return o.p != nil && !o.p.Exited() }

// spawn starts cmd as the server's next process; the caller holds mu and
// has checked that none runs.
func (o *oneProc) spawn(cmd *exec.Cmd) (*spawn.Proc, error) {
	o.starts++
	p, err := spawn.Start(cmd, spawn.Config{Name: fmt.Sprintf("%s#%d", o.name, o.starts)})
	if err != nil {
		return nil, err
	}
	o.p = p
	return p, nil
}

// proc is the current process, nil before the first start.
func (o *oneProc) proc() *spawn.Proc {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.p
}

// Kill crashes the server (SIGKILL) and waits for it to be reaped.
func (o *oneProc) Kill() error {
	p := o.proc()
	if p == nil {
		return fmt.Errorf("%w: %s never started", ErrNotRunning, o.name)
	}
	return p.Kill()
}

// Freeze stops the server (SIGSTOP) and waits until the kernel shows it
// stopped; the server is one process.
func (o *oneProc) Freeze() error { return o.setStopped(true) }

// Thaw resumes a frozen server (SIGCONT).
func (o *oneProc) Thaw() error { return o.setStopped(false) }

func (o *oneProc) setStopped(stop bool) error {
	p := o.proc()
	if p == nil {
		return fmt.Errorf("%w: %s never started", ErrNotRunning, o.name)
	}
	return p.SetStopped(stop, 5*time.Second)
}

// end resumes and kills the process, if it runs: the first half of a
// Close, which then removes the server's data.
func (o *oneProc) end() {
	if p := o.proc(); p != nil && !p.Exited() {
		p.SetStopped(false, time.Second)
		p.Kill()
	}
}

// await polls serves every poll (a process the harness does not control)
// until it holds; until the process p exits, when exited says why from
// its output's tail; or until ctx ends, when p is killed and the error
// says the server does not serve at addr.
func (o *oneProc) await(ctx context.Context, p *spawn.Proc, addr string, poll time.Duration, serves func() bool,
	exited func(tail string) error) error {
	for {
		if serves() {
			return nil
		}
		if p.Exited() {
			return exited(p.Tail())
		}
		select {
		case <-ctx.Done():
			p.Kill()
			return fmt.Errorf("storeproc: %s does not serve on %s: %w", o.name, addr, ctx.Err())
		case <-time.After(poll): // polling a process the harness does not control
		}
	}
}
