package spawn

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
)

// Defaults of Config's zero fields.
const (
	// DefaultTailBytes is how much of a child's standard error a Proc
	// keeps when Config.TailBytes is zero.
	DefaultTailBytes = 16 << 10
	// DefaultReapTimeout bounds the wait for a SIGKILLed child to be
	// reaped when Config.ReapTimeout is zero.
	DefaultReapTimeout = 10 * time.Second
)

// Config says how Start runs a command. The zero value is a valid choice:
// no standard input, standard output kept with standard error, the last
// 16 KiB of it kept, a reap bounded by 10 s, no process group.
type Config struct {
	// Name names the child in errors; empty means the command's base name.
	Name string
	// Stdin opens a pipe to the child's standard input (Proc.Stdin);
	// false gives it the null device.
	Stdin bool
	// Stdout reads the child's standard output r, on a goroutine of its
	// own; whatever it leaves unread is discarded, and the process is
	// reaped once the output has ended. stderr is where the child's
	// standard error goes (the tail and Output), for what the reader does
	// not expect. Nil sends standard output where standard error goes.
	Stdout func(r io.Reader, stderr io.Writer)
	// Output also receives what the child writes to its standard error
	// (and to its standard output when Stdout is nil). It must be safe for
	// concurrent use; its errors are ignored, so a failing writer cannot
	// stall the child. Nil means only the tail is kept.
	Output io.Writer
	// TailBytes is how many of the last bytes of standard error the Proc
	// keeps (Proc.Tail); zero means DefaultTailBytes (16 KiB).
	TailBytes int
	// ReapTimeout bounds the wait for the child to be reaped after Kill's
	// SIGKILL; zero means DefaultReapTimeout (10 s).
	ReapTimeout time.Duration
	// Group starts the child as the leader of a process group of its own
	// (Setpgid), so that Kill and Stop signal every process in the group,
	// not only the child. Outside Unix, Start refuses it with
	// ErrUnsupported.
	Group bool
}

// Proc is a started child process.
type Proc struct {
	name  string
	cmd   *exec.Cmd
	cfg   Config
	stdin io.WriteCloser
	tail  *syncbuf.Tail
	done  chan struct{} // closed once the process is reaped
	err   error         // cmd.Wait's result, set before done closes
}

// Start starts cmd as cfg says. cmd must not have been started, and Start
// sets its Stdin (with Config.Stdin), Stdout and Stderr; it keeps the
// command's Path, Args, Env, Dir and SysProcAttr, adding the parent-death
// signal and the process group.
func Start(cmd *exec.Cmd, cfg Config) (*Proc, error) {
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cmd.Path)
	}
	if cfg.TailBytes == 0 {
		cfg.TailBytes = DefaultTailBytes
	}
	if cfg.ReapTimeout == 0 {
		cfg.ReapTimeout = DefaultReapTimeout
	}
	if err := setAttrs(cmd, cfg.Group); err != nil {
		return nil, fmt.Errorf("spawn: start %s: %w", cfg.Name, err)
	}
	p := &Proc{name: cfg.Name, cmd: cmd, cfg: cfg, tail: &syncbuf.Tail{Limit: cfg.TailBytes}, done: make(chan struct{})}
	errOut := &sink{tail: p.tail, out: cfg.Output}
	cmd.Stderr = errOut
	var stdout io.ReadCloser
	var err error
	if cfg.Stdout != nil {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			return nil, fmt.Errorf("spawn: start %s: %w", cfg.Name, err)
		}
	} else {
		cmd.Stdout = errOut // the same writer: exec.Cmd gives both one pipe
	}
	if cfg.Stdin {
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("spawn: start %s: %w", cfg.Name, err)
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spawn: start %s (%s): %w", cfg.Name, cmd.Path, err)
	}
	go func() {
		if stdout != nil {
			cfg.Stdout(stdout, errOut)
			io.Copy(io.Discard, stdout)
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Name is the child's name in errors (Config.Name).
func (p *Proc) Name() string { return p.name }

// Pid is the child's process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stdin is the pipe to the child's standard input, nil without
// Config.Stdin. Closing it is how a child that reads its input to the end
// is told to finish.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Tail is the last Config.TailBytes the child wrote to its standard error
// (and to its standard output, without Config.Stdout); a character cut at
// the start shows as "?".
func (p *Proc) Tail() string { return p.tail.String() }

// Done is closed once the child has exited, its standard output has been
// read to the end and it has been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether Done is closed.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the child ended, once Done is closed: nil for exit status 0,
// an *exec.ExitError otherwise. While the child runs, Err is nil.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// sink is where the child's standard error goes: the tail, and a copy to
// out whose errors are ignored. One pointer, so exec.Cmd sees Stdout ==
// Stderr when both go here.
type sink struct {
	tail *syncbuf.Tail
	out  io.Writer
}

// Write writes p to the tail and to out and reports it all written.
func (s *sink) Write(p []byte) (int, error) {
	s.tail.Write(p)
	if s.out != nil {
		s.out.Write(p)
	}
	return len(p), nil
}
