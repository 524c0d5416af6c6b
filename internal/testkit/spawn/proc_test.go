//go:build linux

package spawn

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
)

// sh starts `sh -c script` with cfg and kills it when the test ends.
func sh(t *testing.T, script string, cfg Config) *Proc {
	t.Helper()
	p, err := Start(exec.Command("sh", "-c", script), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// done waits for p to be reaped, failing the test after a minute.
func done(t *testing.T, p *Proc) {
	t.Helper()
	if err := p.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}
}

// lines returns a Config.Stdout that sends each line to the channel it
// returns, closed at the end of the output.
func lines() (func(io.Reader, io.Writer), <-chan string) {
	ch := make(chan string, 100)
	return func(r io.Reader, _ io.Writer) {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}, ch
}

func TestStdoutStderrAndExitStatus(t *testing.T) {
	read, out := lines()
	var copied syncbuf.Buffer
	p := sh(t, "echo one; echo oops >&2; echo two; exit 3", Config{Name: "child", Stdout: read, Output: &copied})
	var got []string
	for l := range out {
		got = append(got, l)
	}
	done(t, p)
	if strings.Join(got, ",") != "one,two" {
		t.Errorf("stdout lines %q, want one, two", got)
	}
	if p.Tail() != "oops\n" || copied.String() != "oops\n" {
		t.Errorf("tail %q, Output got %q; want both \"oops\\n\"", p.Tail(), copied.String())
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) || ee.ExitCode() != 3 {
		t.Errorf("Err() = %v, want exit status 3", p.Err())
	}
	if !p.Exited() || p.Name() != "child" {
		t.Errorf("Exited() = %v, Name() = %q; want true, child", p.Exited(), p.Name())
	}
}

func TestWithoutStdoutReaderOutputGoesWithStderr(t *testing.T) {
	p := sh(t, "echo out; echo err >&2", Config{})
	done(t, p)
	if got := p.Tail(); got != "out\nerr\n" {
		t.Errorf("tail %q, want out and err", got)
	}
	if p.Err() != nil || p.Name() != "sh" {
		t.Errorf("Err() = %v, Name() = %q; want nil, sh", p.Err(), p.Name())
	}
}

func TestTailKeepsTheLastBytes(t *testing.T) {
	p := sh(t, "printf 0123456789abcdef >&2", Config{TailBytes: 8})
	done(t, p)
	if got := p.Tail(); got != "89abcdef" {
		t.Errorf("tail %q, want 89abcdef", got)
	}
}

func TestStdoutReaderCanWriteToStderr(t *testing.T) {
	p := sh(t, "echo stray", Config{Stdout: func(r io.Reader, stderr io.Writer) {
		b, _ := io.ReadAll(r)
		io.WriteString(stderr, "unexpected: "+string(b))
	}})
	done(t, p)
	if got := p.Tail(); got != "unexpected: stray\n" {
		t.Errorf("tail %q, want the reader's note", got)
	}
}

func TestStdinPipe(t *testing.T) {
	read, out := lines()
	p, err := Start(exec.Command("cat"), Config{Stdin: true, Stdout: read})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	io.WriteString(p.Stdin(), "hello\n")
	if got := <-out; got != "hello" {
		t.Errorf("echoed %q, want hello", got)
	}
	p.Stdin().Close()
	done(t, p)
	if p.Err() != nil {
		t.Errorf("cat ended with %v after its input closed", p.Err())
	}
}

func TestWaitTimesOut(t *testing.T) {
	p := sh(t, "exec sleep 60", Config{})
	if err := p.Wait(50 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("Wait = %v, want ErrTimeout", err)
	}
	if p.Exited() || p.Err() != nil {
		t.Errorf("Exited() = %v, Err() = %v while running", p.Exited(), p.Err())
	}
}

func TestKillReapsAStoppedChild(t *testing.T) {
	p := sh(t, "exec sleep 60", Config{})
	if err := p.SetStopped(true, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if stopped, err := p.Stopped(); !stopped || err != nil {
		t.Fatalf("Stopped() = %v, %v after SetStopped(true)", stopped, err)
	}
	if err := p.SetStopped(false, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.SetStopped(true, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if !errors.As(p.Err(), &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Err() = %v, want killed by SIGKILL", p.Err())
	}
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill = %v, want nil", err)
	}
}

func TestSignalAfterExit(t *testing.T) {
	p := sh(t, "true", Config{})
	done(t, p)
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
		t.Errorf("Signal after exit = %v, want ErrExited", err)
	}
	if err := p.SetStopped(true, time.Second); !errors.Is(err, ErrExited) {
		t.Errorf("SetStopped after exit = %v, want ErrExited", err)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop after exit = %v, want nil", err)
	}
}

func TestStopTerminates(t *testing.T) {
	p := sh(t, "exec sleep 60", Config{})
	if err := p.SetStopped(true, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	err := p.Stop(30 * time.Second) // SIGCONT first: a stopped child cannot act on SIGTERM
	if err == nil || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Stop = %v, want the child terminated by SIGTERM", err)
	}
}

func TestStopKillsAChildThatIgnoresTERM(t *testing.T) {
	read, out := lines()
	p := sh(t, "trap '' TERM; echo ready; exec sleep 60", Config{Stdout: read})
	if got := <-out; got != "ready" {
		t.Fatalf("first line %q, want ready", got)
	}
	if err := p.Stop(200 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("Stop = %v, want ErrTimeout", err)
	}
	if !p.Exited() {
		t.Error("child not reaped after Stop killed it")
	}
}

// TestGroupKillReachesGrandchildren starts a shell whose child sleeps
// holding the output pipes: the shell's reap waits for the end of the
// output, which only a signal to the whole group brings.
func TestGroupKillReachesGrandchildren(t *testing.T) {
	const script = "sleep 60 & echo $!; wait"
	t.Run("group", func(t *testing.T) {
		read, out := lines()
		p := sh(t, script, Config{Stdout: read, Group: true})
		<-out
		if err := p.Kill(); err != nil {
			t.Fatalf("Kill = %v, want the group killed and the shell reaped", err)
		}
	})
	t.Run("no group", func(t *testing.T) {
		read, out := lines()
		p := sh(t, script, Config{Stdout: read, ReapTimeout: 300 * time.Millisecond})
		pid, err := strconv.Atoi(<-out)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		if err := p.Kill(); !errors.Is(err, ErrTimeout) {
			t.Fatalf("Kill = %v, want ErrTimeout: the sleeping grandchild holds the output open", err)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		done(t, p)
	})
}

func TestStartFails(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/child"), Config{}); err == nil || !strings.Contains(err.Error(), "child") {
		t.Errorf("Start of a missing executable = %v, want an error naming it", err)
	}
}
