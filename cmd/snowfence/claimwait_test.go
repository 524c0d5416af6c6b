package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

var errHeld = fmt.Errorf("%w: 5-5 held by host/1", lease.ErrNoFreeNumber)

// A spare claims again after jittered, doubling waits bounded by max, tells
// of each wait, logs the first wait and then at most once per logEvery, and
// returns the node once a claim succeeds.
func TestClaimWaiterRetries(t *testing.T) {
	clk := fakeclock.New(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	clk.AutoAdvance(true)
	var logs bytes.Buffer
	jitters := []float64{0, 0.5, 0.999, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	var told []int
	w := &claimWaiter{
		clock:    clk,
		jitter:   func() float64 { j := jitters[0]; jitters = jitters[1:]; return j },
		min:      100 * time.Millisecond,
		max:      time.Second,
		logEvery: 3 * time.Second,
		log:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		waiting:  func(attempt int, err error) { told = append(told, attempt) },
	}
	want := &node.Node{}
	var at []time.Duration
	const failures = 12
	got, err := w.wait(context.Background(), func(context.Context) (*node.Node, error) {
		at = append(at, clk.Now().Mono)
		if len(at) <= failures {
			return nil, errHeld
		}
		return want, nil
	})
	if err != nil || got != want {
		t.Fatalf("wait = %p, %v; want the node", got, err)
	}
	// Backoffs 100, 200, 400, 800 ms, then 1 s; each wait is half the
	// backoff plus the jitter's share of the other half.
	wantWaits := []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 200*time.Millisecond + time.Duration(0.999*float64(200*time.Millisecond)),
		400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond,
		500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	if len(at) != failures+1 {
		t.Fatalf("%d claims, want %d", len(at), failures+1)
	}
	for i, d := range wantWaits {
		if got := at[i+1] - at[i]; got != d {
			t.Errorf("wait %d: %s, want %s", i+1, got, d)
		}
	}
	if len(told) != failures || told[0] != 1 || told[failures-1] != failures {
		t.Errorf("waiting told of attempts %v, want 1..%d", told, failures)
	}
	// 6.25 s of waits: the first line, then one per 3 s at most.
	lines := strings.Count(logs.String(), "waiting for one to free") + strings.Count(logs.String(), "still waiting")
	if lines < 2 || lines > 3 {
		t.Errorf("%d wait lines over %s, want 2 or 3 (the first, then at most one per 3 s):\n%s", lines, at[failures]-at[0], logs.String())
	}
	if !strings.Contains(logs.String(), "a machine number freed") {
		t.Errorf("no line for the claim that succeeded:\n%s", logs.String())
	}
}

// Errors a retry cannot fix end the wait at once, on the first claim or
// after waits.
func TestClaimWaiterStopsOnOtherErrors(t *testing.T) {
	for _, want := range []error{lease.ErrSchedule, lease.ErrInvalid, errors.New("placement: machine 2000 does not fit v1")} {
		for _, heldFirst := range []int{0, 3} {
			clk := fakeclock.New(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
			clk.AutoAdvance(true)
			w := &claimWaiter{clock: clk, log: slog.New(slog.DiscardHandler)}
			calls := 0
			_, err := w.wait(context.Background(), func(context.Context) (*node.Node, error) {
				calls++
				if calls <= heldFirst {
					return nil, errHeld
				}
				return nil, want
			})
			if !errors.Is(err, want) || calls != heldFirst+1 {
				t.Errorf("%v after %d held: wait returned %v after %d claims; want it at once", want, heldFirst, err, calls)
			}
		}
	}
}

// A stop (ctx ending) during a wait ends it without another claim.
func TestClaimWaiterStopsWithTheContext(t *testing.T) {
	clk := fakeclock.New(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) // frozen: the wait blocks
	w := &claimWaiter{clock: clk, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	done := make(chan error, 1)
	go func() {
		_, err := w.wait(ctx, func(context.Context) (*node.Node, error) {
			calls++
			return nil, errHeld
		})
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.BlockUntilWaiters(wctx, 1); err != nil {
		t.Fatal("the waiter never slept on the clock")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Errorf("wait returned %v after %d claims; want context.Canceled after 1", err, calls)
		}
	case <-wctx.Done():
		t.Fatal("wait did not return after the context ended")
	}
}

// While quiet is set, every record goes out at Debug (so an Info handler
// drops it); once it is cleared, records keep their level.
func TestQuietWhile(t *testing.T) {
	var out bytes.Buffer
	var quiet atomic.Bool
	log := quietWhile(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})), &quiet).With("k", "v")
	quiet.Store(true)
	log.Warn("claim failed")
	quiet.Store(false)
	log.Warn("claimed")
	got := out.String()
	if !strings.Contains(got, `level=DEBUG msg="claim failed" k=v`) || !strings.Contains(got, `level=WARN msg=claimed k=v`) {
		t.Errorf("log:\n%s\nwant the first line at DEBUG, the second at WARN, both with k=v", got)
	}
}
