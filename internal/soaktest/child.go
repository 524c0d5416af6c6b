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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
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

// OneLine is err's text on one line.
func OneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// Out writes a child's lines whole, flushing each; it is safe for
// concurrent use.
type Out struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewOut returns an Out writing to w.
func NewOut(w io.Writer) *Out { return &Out{w: bufio.NewWriter(w)} }

// Printf prints one line (format without the newline).
func (o *Out) Printf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, format+"\n", args...)
	o.w.Flush()
}

// IDs prints "ids <idx> <id> …", one batch of holder idx.
func (o *Out) IDs(idx int, ids []snowfence.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.w.AvailableBuffer()
	b = append(b, "ids "...)
	b = strconv.AppendInt(b, int64(idx), 10)
	for _, id := range ids {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, '\n')
	o.w.Write(b)
	o.w.Flush()
}

// ChildMain is the body of a child process started by Spawn with env set.
// Run as a normal test (env unset) it skips t, naming parents, the tests
// that start it. Else it decodes the JSON configuration in env and calls
// body with a context that ends when the process's lifetime (Spec().Lifetime)
// runs out or its stdin closes; lines the parent writes to stdin are echoed
// as "echo <text>". A configuration that does not decode prints "fatal".
func ChildMain[C Config](t *testing.T, env, parents string, body func(ctx context.Context, cfg C, out *Out)) {
	js := os.Getenv(env)
	if js == "" {
		t.Skip("child holder process: runs only when re-executed by " + parents)
	}
	out := NewOut(os.Stdout)
	var cfg C
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		out.Printf("fatal config: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Spec().Lifetime)
	defer cancel()
	go func() {
		// Echo the parent's lines; EOF means the parent is gone or done:
		// release and exit.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			out.Printf("echo %s", sc.Text())
		}
		cancel()
	}()
	body(ctx, cfg, out)
}

// Reporter prints line() every d until ctx ends (at most Lifetime/d times),
// from a goroutine of its own. The returned stop waits for that goroutine
// (ctx must have ended or be about to) and prints line() a last time.
func Reporter(ctx context.Context, out *Out, spec HolderSpec, d time.Duration, line func() string) (stop func()) {
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
				out.Printf("%s", line())
			}
		}
	}()
	return func() {
		<-done
		out.Printf("%s", line())
	}
}

// RunHolders runs spec.Holders holders on s until ctx ends, named
// "<process>/h<index>" after lease.ThisProcess, printing to out.
func RunHolders(ctx context.Context, spec HolderSpec, s lease.Store, out *Out) {
	me, err := lease.ThisProcess()
	if err != nil {
		out.Printf("fatal %s", OneLine(err))
		return
	}
	var wg sync.WaitGroup
	for i := range spec.Holders {
		wg.Go(func() { RunHolder(ctx, spec, s, fmt.Sprintf("%s/h%d", me, i), i, out) })
	}
	wg.Wait()
}

// RunHolder claims a number (retrying every 100 ms while none is free,
// printing "noclaim"), prints "claimed", then takes a batch every
// spec.Every until ctx ends, printing each batch or refusal. It releases
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
		k, err = lease.StartKeeper(kctx, lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk,
			LeaseFor: spec.LeaseFor, RenewEvery: spec.RenewEvery, SelfFence: spec.SelfFence})
		cancel()
		if err != nil && ctx.Err() == nil {
			out.Printf("noclaim %d %s", idx, OneLine(err))
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		k.Close(cctx)
		cancel()
	}()
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		out.Printf("fatal %s", OneLine(err))
		return
	}
	k.SetLastIssued(g.LastIssued)
	st := k.Status()
	out.Printf("claimed %d %d %d", idx, st.Machine, st.Token)
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
			kind := "other"
			if errors.Is(err, snowfence.ErrFenced) {
				kind = "fenced"
			}
			out.Printf("refused %d %s %s", idx, kind, OneLine(err))
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
