//go:build linux

package soaktest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/wire"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// HolderSpec is what the holders of one child process do. Store-specific
// child configurations embed it or return it from Spec.
type HolderSpec struct {
	Range lease.Range
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

// Spec returns h, so that a configuration embedding a HolderSpec is a
// Config.
func (h HolderSpec) Spec() HolderSpec { return h }

// Config is a child process's configuration: JSON-encoded into the child's
// environment, it carries the holders' HolderSpec.
type Config interface {
	Spec() HolderSpec
}

// Out writes a child's frames (package internal/testkit/wire) whole, flushing
// each; it is safe for concurrent use. Its writes ignore errors: a failed
// flush means the parent is gone.
type Out struct {
	w *wire.Writer
}

// NewOut returns an Out writing to w.
func NewOut(w io.Writer) *Out { return &Out{w: wire.NewWriter(w)} }

// values writes one values frame and flushes it.
func (o *Out) values(kind wire.Kind, idx int, vals []int64) {
	o.w.Write(kind, idx, vals)
	o.w.Flush()
}

// text writes one text frame and flushes it.
func (o *Out) text(kind wire.Kind, idx int, text string) {
	o.w.WriteText(kind, idx, text)
	o.w.Flush()
}

// IDs writes one batch of holder idx, in issue order (an ids frame).
func (o *Out) IDs(idx int, ids []snowfence.ID) {
	vals := make([]int64, len(ids))
	for i, id := range ids {
		vals[i] = int64(id)
	}
	o.values(wire.KindIDs, idx, vals)
}

// Claimed says holder idx's keeper made its first claim, of machine with
// token (a claimed frame).
func (o *Out) Claimed(idx, machine int, token uint64) {
	o.values(wire.KindClaimed, idx, []int64{int64(machine), int64(token)})
}

// NoClaim says holder idx's keeper could not start (a noclaim frame).
func (o *Out) NoClaim(idx int, err error) { o.text(wire.KindNoClaim, idx, err.Error()) }

// Refused says holder idx's batch was refused with err: a fenced frame if
// err is snowfence.ErrFenced, a refused frame otherwise.
func (o *Out) Refused(idx int, err error) {
	kind := wire.KindRefused
	if errors.Is(err, snowfence.ErrFenced) {
		kind = wire.KindFenced
	}
	o.text(kind, idx, err.Error())
}

// Counts writes the process's store-specific request counts (a stats
// frame of holder 0).
func (o *Out) Counts(counts ...int64) { o.values(wire.KindStats, 0, counts) }

// Echo echoes a line the parent wrote to stdin (an echo frame).
func (o *Out) Echo(line string) { o.text(wire.KindEcho, 0, line) }

// Fatal says the child could not do its work (a fatal frame).
func (o *Out) Fatal(err error) { o.text(wire.KindFatal, 0, err.Error()) }

// ChildMain is the body of a child process started by Spawn with env set.
// Run as a normal test (env unset) it skips t, naming parents, the tests
// that start it. Else it decodes the JSON configuration in env and calls
// body with a context that ends when the process's lifetime (Spec().Lifetime)
// runs out or its stdin closes; lines the parent writes to stdin are echoed
// in echo frames. A configuration that does not decode is a fatal frame.
//
// The frames go to the process's standard output, and nothing else does:
// ChildMain points file descriptor 1 at standard error, so what the test
// binary prints there besides (its closing "PASS", a report of a failed
// child) lands in the stderr the parent keeps, not in the stream.
func ChildMain[C Config](t *testing.T, env, parents string, body func(ctx context.Context, cfg C, out *Out)) {
	js := os.Getenv(env)
	if js == "" {
		t.Skip("child holder process: runs only when re-executed by " + parents)
	}
	stream, err := frameStream()
	if err != nil {
		fmt.Fprintf(os.Stderr, "soaktest child: %v\n", err)
		return
	}
	out := NewOut(stream)
	var cfg C
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		out.Fatal(fmt.Errorf("config: %w", err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Spec().Lifetime)
	defer cancel()
	go func() {
		// Echo the parent's lines; EOF means the parent is gone or done:
		// release and exit.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			out.Echo(sc.Text())
		}
		cancel()
	}()
	body(ctx, cfg, out)
}

// frameStream returns the process's standard output, as a file of its own,
// and points file descriptor 1 at standard error.
func frameStream() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("dup stdout: %w", err)
	}
	if err := syscall.Dup3(2, 1, 0); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("stdout to stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "frames"), nil
}

// Reporter writes counts() as a stats frame (Out.Counts) every d until ctx
// ends (at most Lifetime/d times), from a goroutine of its own. The
// returned stop waits for that goroutine (ctx must have ended or be about
// to) and writes counts() a last time.
func Reporter(ctx context.Context, out *Out, spec HolderSpec, d time.Duration, counts func() []int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d) // pacing, not synchronisation
		defer t.Stop()
		for n := int64(0); n <= int64(spec.Lifetime/d); n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				out.Counts(counts()...)
			}
		}
	}()
	return func() {
		<-done
		out.Counts(counts()...)
	}
}

// RunHolders runs spec.Holders holders on s until ctx ends, named
// "<process>/h<index>" after lease.ThisProcess, writing to out.
func RunHolders(ctx context.Context, spec HolderSpec, s lease.Store, out *Out) {
	me, err := lease.ThisProcess()
	if err != nil {
		out.Fatal(err)
		return
	}
	var wg sync.WaitGroup
	for i := range spec.Holders {
		wg.Go(func() { RunHolder(ctx, spec, s, fmt.Sprintf("%s/h%d", me, i), i, out) })
	}
	wg.Wait()
}

// RunHolder claims a number (retrying every 100 ms while none is free,
// writing a noclaim frame), writes a claimed frame, then takes a batch
// every spec.Every until ctx ends, writing each batch or refusal. It releases
// the number on the way out.
func RunHolder(ctx context.Context, spec HolderSpec, s lease.Store, name string, idx int, out *Out) {
	clk := snowfence.SystemClock() // one clock for keeper and generator
	rng := spec.Range
	var k *lease.Keeper
	for try := 0; k == nil; try++ {
		if try > 0 {
			if !sleep(ctx, 100*time.Millisecond) || try > 1000 { // retry pacing
				return
			}
		}
		kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var err error
		k, err = leasetest.StartKeeper(kctx, lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk,
			LeaseFor: spec.LeaseFor, RenewEvery: spec.RenewEvery, SelfFence: spec.SelfFence})
		cancel()
		if err != nil && ctx.Err() == nil {
			out.NoClaim(idx, err)
		}
	}
	var g *snowfence.Generator
	defer func() {
		// The generator first: its LastIssued, the release mark, is
		// final once it is closed.
		var last int64
		if g != nil {
			g.Close()
			last = g.LastIssued()
		}
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		k.Close(cctx, last)
		cancel()
	}()
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		out.Fatal(err)
		return
	}
	st := k.Status()
	out.Claimed(idx, st.Machine, st.Token)
	t := time.NewTicker(spec.Every) // pacing, not synchronisation
	defer t.Stop()
	buf := make([]snowfence.ID, 0, spec.Batch)
	for n := int64(0); n <= int64(spec.Lifetime/spec.Every); n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := g.AppendN(ctx, buf[:0], spec.Batch)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			out.Refused(idx, err)
			continue
		}
		out.IDs(idx, ids)
	}
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
