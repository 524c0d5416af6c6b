package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// extension is one outcome of a background extender.
type extension struct {
	holder string
	at     time.Time
	mark   int64
	err    error
}

// TestLeaderStopWhileExtending stops the leader of a 3-member cluster while
// three holders keep extending: their extensions resume under the new
// leader, no lease is lost, marks never fall, and claims made around the
// change get distinct tokens.
func TestLeaderStopWhileExtending(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	cli := c.Client(t)
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	tokens := make(map[uint64]string)
	claim := func(holder string) *lease.Lease {
		t.Helper()
		l := leasetest.MustClaim(t, s, req(holder, 0, 15, now))
		if prev, ok := tokens[l.Token]; ok {
			t.Fatalf("token %d given to %s and %s", l.Token, prev, holder)
		}
		tokens[l.Token] = holder
		return l
	}

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	events := make(chan extension, 1024)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for i := range 3 {
		l := claim(fmt.Sprintf("h%d", i))
		wg.Go(func() { extendLoop(ctx, s, l, events) })
	}
	lastMark := make(map[string]int64)
	// await waits for every holder to report a success after since.
	await := func(since time.Time) {
		t.Helper()
		done := make(map[string]bool)
		timeout := time.After(testTimeout)
		for len(done) < 3 {
			select {
			case e := <-events:
				if errors.Is(e.err, lease.ErrLost) || errors.Is(e.err, lease.ErrQuarantined) || errors.Is(e.err, lease.ErrRestored) {
					t.Fatalf("%s: %v", e.holder, e.err)
				}
				if e.err != nil {
					t.Logf("%s: transient: %v", e.holder, e.err)
					continue
				}
				if e.mark < lastMark[e.holder] {
					t.Fatalf("%s: mark fell from %d to %d", e.holder, lastMark[e.holder], e.mark)
				}
				lastMark[e.holder] = e.mark
				if e.at.After(since) {
					done[e.holder] = true
				}
			case <-timeout:
				t.Fatalf("extensions did not resume within %v: %v resumed", testTimeout, done)
			}
		}
	}
	await(time.Now())
	leader := c.Leader(t)
	c.Stop(leader)
	stopped := time.Now()
	claim("after-stop")
	await(stopped)
	t.Logf("stopped leader m%d; extensions resumed within %v", leader, time.Since(stopped).Round(time.Millisecond))
	c.Restart(t, leader)
	claim("after-restart")
	await(time.Now())
}

// extendLoop extends l every 50 ms until ctx ends, reporting each outcome.
func extendLoop(ctx context.Context, s *etcdstore.Store, l *lease.Lease, events chan<- extension) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		sent := time.Now()
		nl, err := s.Extend(rctx, l, sent.UnixMilli()+3000, 10*time.Second)
		cancel()
		if ctx.Err() != nil {
			return
		}
		e := extension{holder: l.Holder, at: sent, err: err}
		if err == nil {
			l, e.mark = nl, nl.MarkMs
		}
		select {
		case events <- e:
		default: // the test is not reading; drop
		}
	}
}
