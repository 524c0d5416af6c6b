//go:build linux

package soaktest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/syncbuf"
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
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *syncbuf.Buffer
	readDone chan struct{}
	waitOnce sync.Once
}

// Spawn re-executes the test binary running c.Test with c.Config in c.Env;
// onLine gets each line the child prints, in order, on a goroutine of its
// own. The child dies with the parent (SIGKILL), and is killed when t ends
// if it has not exited by then.
func Spawn(t *testing.T, c Child, onLine func(string)) *Proc {
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Proc{cmd: cmd, stderr: &syncbuf.Buffer{Limit: 64 << 10}, readDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			onLine(sc.Text())
		}
	}()
	t.Cleanup(func() {
		p.Signal(syscall.SIGCONT) // a stopped process dies of SIGKILL too, but be tidy
		p.Kill()
	})
	return p
}

// Pid is the child's process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the child.
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill SIGKILLs the child (if it still runs) and reaps it.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	if !p.reap(10 * time.Second) {
		p.waitOnce.Do(func() { p.cmd.Wait() })
	}
}

// Finish closes the child's stdin, which makes it release its numbers and
// exit, and waits up to d for that before killing it.
func (p *Proc) Finish(d time.Duration) {
	p.stdin.Close()
	if !p.reap(d) {
		p.Kill()
	}
}

// reap waits up to d for the child's output to end, then for the process.
// It reports whether the output ended in time.
func (p *Proc) reap(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.readDone:
	case <-t.C:
		return false
	}
	p.waitOnce.Do(func() { p.cmd.Wait() })
	return true
}

// Write sends a line to the child's stdin; ChildMain echoes it back.
func (p *Proc) Write(line string) error {
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// Stopped reports whether the process is in the stopped state (SIGSTOP).
func (p *Proc) Stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] == "T"
}

// Stderr is what the child wrote to its stderr (the first 64 KiB).
func (p *Proc) Stderr() string { return p.stderr.String() }
