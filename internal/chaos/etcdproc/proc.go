//go:build linux

package etcdproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/snowfence/snowfence/internal/syncbuf"
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
	name   string
	cmd    *exec.Cmd
	ready  chan struct{} // closed when the member printed its ready line
	exited chan struct{} // closed once the process is reaped
	err    error         // cmd.Wait's result, set before exited closes
	tail   *syncbuf.Tail
}

// spawn starts cmd as member name. The member is ready when it prints
// readyLine; everything else it writes goes to tail and to out, which must
// be safe for concurrent use and never fail (see lockedWriter). cmd gets
// Pdeathsig SIGKILL unless it has a death signal already.
func spawn(name string, cmd *exec.Cmd, readyLine string, out io.Writer) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p := &proc{
		name:   name,
		cmd:    cmd,
		ready:  make(chan struct{}),
		exited: make(chan struct{}),
		tail:   &syncbuf.Tail{Limit: stderrTail},
	}
	errOut := fanOut{p.tail, out}
	cmd.Stdout = &readyWatcher{want: readyLine, ready: p.ready, other: errOut, name: name}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("etcdproc: start member %s (%s): %w", name, cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not been reaped yet.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitError describes the process's exit; call it after exited closed.
func (p *proc) exitError() *ExitError {
	return &ExitError{Member: p.name, Err: p.err, Stderr: p.tail.String()}
}

// waitReady waits until the member is ready, exits, or ctx ends.
func (p *proc) waitReady(ctx context.Context) error {
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return p.exitError()
	case <-ctx.Done():
		return fmt.Errorf("etcdproc: member %s not ready: %w", p.name, context.Cause(ctx))
	}
}

// kill sends SIGKILL (and SIGCONT, after it if resumeFirst is false, before
// it otherwise, so a stopped process never lingers) and waits until the
// process is reaped.
func (p *proc) kill(resumeFirst bool) error {
	if !p.running() {
		return nil
	}
	if resumeFirst {
		p.signal(syscall.SIGCONT)
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("etcdproc: kill member %s (pid %d): %w", p.name, p.pid(), err)
	}
	if !resumeFirst {
		p.signal(syscall.SIGCONT)
	}
	t := time.NewTimer(reapTimeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
		return fmt.Errorf("etcdproc: member %s (pid %d) not reaped %v after SIGKILL", p.name, p.pid(), reapTimeout)
	}
}

// signal sends sig, treating a process that has already exited as done.
func (p *proc) signal(sig syscall.Signal) error {
	err := p.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// setStopped sends SIGSTOP (stop true) or SIGCONT and waits until the
// kernel reports the process stopped, or no longer stopped.
func (p *proc) setStopped(stop bool) error {
	sig, verb := syscall.SIGCONT, "resume"
	if stop {
		sig, verb = syscall.SIGSTOP, "pause"
	}
	if err := p.signal(sig); err != nil {
		return fmt.Errorf("etcdproc: %s member %s (pid %d): %w", verb, p.name, p.pid(), err)
	}
	deadline := time.Now().Add(stateTimeout)
	for {
		state, err := procState(p.pid())
		if err != nil || !p.running() {
			return fmt.Errorf("etcdproc: %s member %s (pid %d): %w", verb, p.name, p.pid(), ErrNotRunning)
		}
		if (state == 'T') == stop {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcdproc: %s member %s (pid %d): state %c after %v", verb, p.name, p.pid(), state, stateTimeout)
		}
		time.Sleep(time.Millisecond) // poll: only the kernel can deliver the signal
	}
}

// procState is the state letter of process pid in /proc/<pid>/stat ('R',
// 'S', 'T' for stopped, 'Z' for a zombie, …).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces; the state follows it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("etcdproc: unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// readyWatcher is a member's stdout: it closes ready at the line want and
// copies any other line to other, flagged as unexpected. exec.Cmd calls
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

// fanOut writes to every writer and reports success whatever they return,
// so a failing writer cannot stall a child blocked on a full pipe.
type fanOut []io.Writer

// Write writes p to each writer.
func (f fanOut) Write(p []byte) (int, error) {
	for _, w := range f {
		w.Write(p)
	}
	return len(p), nil
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
