//go:build linux

package lease_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// Holders in child processes. The parent test re-executes its own test
// binary with SNOWFENCE_CHILD=holder and a JSON childConfig in
// SNOWFENCE_CHILD_CONFIG; TestChildHolder then runs keepers and generators
// against the given etcd and prints what they do, one flushed line each:
//
//	claimed <holder> <machine> <token>     a keeper's first claim
//	noclaim <holder> <error>               StartKeeper failed (retried)
//	ids <holder> <id> <id> …               one batch, in issue order
//	refused <holder> fenced|other <error>  a refused batch
//	echo <text>                            a line the parent wrote to stdin
//	fatal <error>                          the child could not start
//
// <holder> is the holder's index in its process. Lines are written under
// one lock and flushed at once, so a line the parent reads was printed
// whole, and a killed child's unprinted IDs never reach the parent. The
// child exits when its stdin closes (the parent ended or is done with it),
// when its lifetime runs out, or with its parent (SIGKILL on parent death).

const (
	envChild       = "SNOWFENCE_CHILD"
	envChildConfig = "SNOWFENCE_CHILD_CONFIG"
)

// childConfig is what a child holder process runs.
type childConfig struct {
	Endpoints []string
	Prefix    string
	Range     lease.Range
	// Holders is how many keeper+generator pairs the process runs.
	Holders int
	// Batch IDs are taken every Every, per holder.
	Batch int
	Every time.Duration
	// Lifetime bounds the process's life.
	Lifetime time.Duration
	// Keeper timings.
	LeaseFor, RenewEvery, SelfFence time.Duration
}

// TestChildHolder is not a test: it is the body of a child holder process,
// and skips unless the parent test started it.
func TestChildHolder(t *testing.T) {
	if os.Getenv(envChild) != "holder" {
		t.Skip("child holder process: runs only when re-executed by TestPausedHolder or TestSoak")
	}
	out := &lineWriter{w: bufio.NewWriter(os.Stdout)}
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(envChildConfig)), &cfg); err != nil {
		out.printf("fatal config: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Lifetime)
	defer cancel()
	go func() {
		// Echo the parent's lines; EOF means the parent is gone or done.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			out.printf("echo %s", sc.Text())
		}
		cancel()
	}()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: cfg.Endpoints, DialTimeout: 2 * time.Second},
		etcdstore.Config{Prefix: cfg.Prefix, RequestTimeout: time.Second})
	if err != nil {
		if ctx.Err() == nil { // else told to exit while starting up
			out.printf("fatal %s", oneLine(err))
		}
		return
	}
	defer s.Close()
	me, err := lease.ThisProcess()
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	var wg sync.WaitGroup
	for i := range cfg.Holders {
		wg.Go(func() { runChildHolder(ctx, cfg, s, fmt.Sprintf("%s/h%d", me, i), i, out) })
	}
	wg.Wait()
}

// runChildHolder claims a number (retrying while none is free), then takes
// a batch every cfg.Every until ctx ends, printing each batch or refusal.
func runChildHolder(ctx context.Context, cfg childConfig, s lease.Store, name string, idx int, out *lineWriter) {
	clk := snowfence.SystemClock() // one clock for keeper and generator
	rng := cfg.Range
	var k *lease.Keeper
	for try := 0; k == nil; try++ {
		if try > 0 {
			if !tick(ctx, 100*time.Millisecond) || try > 1000 {
				return
			}
		}
		kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var err error
		k, err = lease.StartKeeper(kctx, lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk,
			LeaseFor: cfg.LeaseFor, RenewEvery: cfg.RenewEvery, SelfFence: cfg.SelfFence})
		cancel()
		if err != nil {
			out.printf("noclaim %d %s", idx, oneLine(err))
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		k.Close(cctx)
		cancel()
	}()
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	k.SetLastIssued(g.LastIssued)
	st := k.Status()
	out.printf("claimed %d %d %d", idx, st.Machine, st.Token)
	t := time.NewTicker(cfg.Every) // pacing, not synchronisation
	defer t.Stop()
	buf := make([]snowfence.ID, 0, cfg.Batch)
	for n := int64(0); n <= int64(cfg.Lifetime/cfg.Every); n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := g.AppendN(ctx, buf[:0], cfg.Batch)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			kind := "other"
			if errors.Is(err, snowfence.ErrFenced) {
				kind = "fenced"
			}
			out.printf("refused %d %s %s", idx, kind, oneLine(err))
			continue
		}
		out.ids(idx, ids)
	}
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// lineWriter writes whole lines, flushing each.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (lw *lineWriter) printf(format string, args ...any) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	fmt.Fprintf(lw.w, format+"\n", args...)
	lw.w.Flush()
}

func (lw *lineWriter) ids(idx int, ids []snowfence.ID) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	b := lw.w.AvailableBuffer()
	b = append(b, "ids "...)
	b = strconv.AppendInt(b, int64(idx), 10)
	for _, id := range ids {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, '\n')
	lw.w.Write(b)
	lw.w.Flush()
}

// childProc is a running child holder process, seen from the parent.
type childProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *etcdtest.SyncBuffer
	readDone chan struct{}
	waitOnce sync.Once
}

// startChild starts a child holder process running cfg; onLine gets each
// line it prints, in order, on a goroutine of its own. The child is killed
// when the test ends, if it has not exited by then.
func startChild(t *testing.T, cfg childConfig, onLine func(string)) *childProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestChildHolder$", "-test.count=1",
		"-test.timeout="+(cfg.Lifetime+30*time.Second).String())
	cmd.Env = append(os.Environ(), envChild+"=holder", envChildConfig+"="+string(js))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &childProc{t: t, cmd: cmd, stderr: &etcdtest.SyncBuffer{Limit: 64 << 10}, readDone: make(chan struct{})}
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
		p.signal(syscall.SIGCONT) // a stopped process dies of SIGKILL too, but be tidy
		p.kill()
	})
	return p
}

func (p *childProc) pid() int { return p.cmd.Process.Pid }

func (p *childProc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// kill SIGKILLs the child (if it still runs) and reaps it.
func (p *childProc) kill() {
	p.cmd.Process.Kill()
	p.reap(10 * time.Second)
}

// finish closes the child's stdin, which makes it release its numbers and
// exit, and waits up to d for that before killing it.
func (p *childProc) finish(d time.Duration) {
	p.stdin.Close()
	if !p.reap(d) {
		p.kill()
	}
}

// reap waits up to d for the child's output to end, then for the process.
// It reports whether the output ended in time.
func (p *childProc) reap(d time.Duration) bool {
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

// write sends a line to the child's stdin; it echoes it back.
func (p *childProc) write(line string) error {
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// stopped reports whether the process is in the stopped state (SIGSTOP).
func (p *childProc) stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] == "T"
}
