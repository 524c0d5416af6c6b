//go:build linux

package etcdproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

const (
	// reapTimeout bounds the wait for a SIGKILLed process to be reaped.
	reapTimeout = 10 * time.Second
	// stateTimeout bounds the wait for a signalled process to stop or
	// continue.
	stateTimeout = 5 * time.Second
	// stderrTail is how much of a member's stderr an ExitError keeps.
	stderrTail = 8 << 10
)

// proc is one run of a member process.
type proc struct {
	*spawn.Proc
	ready chan struct{} // closed when the member printed its ready line
}

// spawnMember starts cmd as member name. The member is ready when it
// prints readyLine; everything else it writes goes to its stderr tail and
// to out, which must be safe for concurrent use and never fail (see
// lockedWriter). cmd gets Pdeathsig SIGKILL unless it has a death signal
// already.
func spawnMember(name string, cmd *exec.Cmd, readyLine string, out io.Writer) (*proc, error) {
	ready := make(chan struct{})
	sp, err := spawn.Start(cmd, spawn.Config{
		Name: name,
		Stdout: func(r io.Reader, stderr io.Writer) {
			io.Copy(&readyWatcher{want: readyLine, ready: ready, other: stderr, name: name}, r)
		},
		Output:      out,
		TailBytes:   stderrTail,
		ReapTimeout: reapTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("etcdproc: start member %s: %w", name, err)
	}
	return &proc{Proc: sp, ready: ready}, nil
}

// pid is the process ID.
func (p *proc) pid() int { return p.Pid() }

// running reports whether the process has not been reaped yet.
func (p *proc) running() bool { return !p.Exited() }

// exitError describes the process's exit; call it after Done closed.
func (p *proc) exitError() *ExitError {
	return &ExitError{Member: p.Name(), Err: p.Err(), Stderr: p.Tail()}
}

// waitReady waits until the member is ready, exits, or ctx ends.
func (p *proc) waitReady(ctx context.Context) error {
	select {
	case <-p.ready:
		return nil
	case <-p.Done():
		return p.exitError()
	case <-ctx.Done():
		return fmt.Errorf("etcdproc: member %s not ready: %w", p.Name(), context.Cause(ctx))
	}
}

// kill sends SIGKILL, then SIGCONT so a paused member dies without running
// again, and waits until the process is reaped.
func (p *proc) kill() error {
	if err := p.Kill(); err != nil {
		return fmt.Errorf("etcdproc: kill member %s: %w", p.Name(), err)
	}
	return nil
}

// setStopped sends SIGSTOP (stop true) or SIGCONT and waits until the
// kernel reports the process stopped, or no longer stopped.
func (p *proc) setStopped(stop bool) error {
	verb := "resume"
	if stop {
		verb = "pause"
	}
	err := p.SetStopped(stop, stateTimeout)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, spawn.ErrExited):
		return fmt.Errorf("etcdproc: %s member %s (pid %d): %w", verb, p.Name(), p.pid(), ErrNotRunning)
	default:
		return fmt.Errorf("etcdproc: %s member %s: %w", verb, p.Name(), err)
	}
}

// procState is the state letter of process pid in /proc/<pid>/stat ('R',
// 'S', 'T' for stopped, 'Z' for a zombie, …).
func procState(pid int) (byte, error) { return spawn.State(pid) }

// readyWatcher is a member's stdout: it closes ready at the line want and
// copies any other line to other, flagged as unexpected. io.Copy calls
// Write from one goroutine.
type readyWatcher struct {
	want  string
	name  string
	ready chan struct{}
	other io.Writer
	buf   []byte
	seen  bool
}

// Write splits p into lines.
func (w *readyWatcher) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.line(string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

// line handles one line of stdout.
func (w *readyWatcher) line(s string) {
	if s == w.want && !w.seen {
		w.seen = true
		close(w.ready)
		return
	}
	fmt.Fprintf(w.other, "etcdproc: unexpected stdout from member %s: %s\n", w.name, s)
}

// lockedWriter serialises the writes of several members to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
