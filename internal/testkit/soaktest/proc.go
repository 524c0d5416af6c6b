//go:build linux

package soaktest

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/spawn"
	"github.com/snowfence/snowfence/internal/testkit/wire"
)

// Child names the child process a parent starts: Test is the test whose
// body calls ChildMain, Env the environment variable it reads its Config
// from.
type Child struct {
	Test, Env string
	Config    Config
}

// Proc is a running child process, seen from the parent.
type Proc struct {
	p *spawn.Proc
}

// stderrTail is how much of a child's stderr a Proc keeps.
const stderrTail = 64 << 10

// Spawn re-executes the test binary running c.Test with c.Config in c.Env;
// onFrame gets each frame the child writes, in order, on a goroutine of
// its own, and may keep it. A stream that is not frames fails t. The child
// dies with the parent (SIGKILL), and is killed when t ends if it has not
// exited by then.
func Spawn(t *testing.T, c Child, onFrame func(wire.Frame)) *Proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+c.Test+"$", "-test.count=1",
		"-test.timeout="+(c.Config.Spec().Lifetime+30*time.Second).String())
	cmd.Env = append(os.Environ(), c.Env+"="+string(js))
	sp, err := spawn.Start(cmd, spawn.Config{
		Name:  c.Test,
		Stdin: true,
		Stdout: func(r io.Reader, _ io.Writer) {
			err := wire.Read(r, func(f wire.Frame) {
				f.Vals = slices.Clone(f.Vals)
				onFrame(f)
			})
			if err != nil {
				t.Errorf("%s child: its output: %v", c.Test, err)
			}
		},
		TailBytes: stderrTail,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{p: sp}
	t.Cleanup(p.Kill)
	return p
}

// Pid is the child's process ID.
func (p *Proc) Pid() int { return p.p.Pid() }

// Signal sends sig to the child; one already reaped reports
// spawn.ErrExited.
func (p *Proc) Signal(sig syscall.Signal) error { return p.p.Signal(sig) }

// Kill SIGKILLs the child (if it still runs), stopped or not, and reaps
// it.
func (p *Proc) Kill() { p.p.Kill() }

// Finish closes the child's stdin, which makes it release its numbers and
// exit, and waits up to d for that before killing it.
func (p *Proc) Finish(d time.Duration) {
	p.p.Stdin().Close()
	if p.p.Wait(d) != nil {
		p.Kill()
	}
}

// Write sends a line to the child's stdin; ChildMain echoes it back in an
// echo frame.
func (p *Proc) Write(line string) error {
	_, err := io.WriteString(p.p.Stdin(), line+"\n")
	return err
}

// Stopped reports whether the process is in the stopped state (SIGSTOP).
func (p *Proc) Stopped() bool {
	stopped, err := p.p.Stopped()
	return err == nil && stopped
}

// Stderr is what the child wrote to its stderr (the last 64 KiB).
func (p *Proc) Stderr() string { return p.p.Tail() }
