//go:build linux

package lease_test

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/wire"
	"github.com/snowfence/snowfence/lease"
)

// TestPausedHolderRefusesOnWaking stops a child process holding machine
// number N with SIGSTOP — the whole process, keeper and generator, as a
// long GC pause, a frozen VM or a debugger would — until its etcd lease has
// expired, claims N in the parent, and resumes the child with SIGCONT. The
// child refuses from the moment it wakes (ErrFenced: its last renewal is
// older than the self-fence window, and then its lease is found lost), so
// every ID it ever sent on N is stamped below the parent's first, and no
// ID occurs twice.
func TestPausedHolderRefusesOnWaking(t *testing.T) {
	t.Parallel()
	const n = 7
	c := etcdtest.Start(t, 1)
	prefix := "/test/" + t.Name()

	var mu sync.Mutex
	var frames []wire.Frame
	arrived := make(chan struct{}, 1)
	child := startChild(t, childConfig{
		Endpoints: c.Endpoints(), Prefix: prefix, Range: lease.Range{Lo: n, Hi: n},
		Holders: 1, Batch: 1, Every: 20 * time.Millisecond, Lifetime: time.Minute,
		LeaseFor: shortLeaseFor, RenewEvery: shortRenewEvery, SelfFence: shortSelfFence,
	}, func(f wire.Frame) {
		mu.Lock()
		frames = append(frames, f)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	})
	// await waits (up to d) until cond holds for the child's frames so far.
	await := func(what string, d time.Duration, cond func([]wire.Frame) bool) {
		t.Helper()
		timeout := time.NewTimer(d)
		defer timeout.Stop()
		for {
			mu.Lock()
			ok := cond(frames)
			tail := frames[max(0, len(frames)-5):]
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-arrived:
			case <-timeout.C:
				t.Fatalf("%s: not within %v; last frames %q; stderr %s", what, d, tail, child.stderr)
			}
		}
	}
	// A second of issuing: two renewals at least.
	await("the child issues", 30*time.Second, func(fs []wire.Frame) bool { return count(fs, isIDs) >= 50 })

	if err := child.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if !pollUntil(5*time.Second, 2*time.Millisecond, child.stopped) {
		t.Fatal("the child did not stop")
	}
	stoppedAt := time.Now()

	// The child's etcd lease expires while it is stopped.
	s := newStore(t, c.Endpoints())
	if !pollUntil(15*time.Second, 20*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rec, err := s.Get(ctx, n)
		return err == nil && !rec.Held()
	}) {
		t.Fatalf("the stopped child's key never expired: %+v", mustGetRecord(t, s, n))
	}
	t.Logf("the stopped child's owner key expired %v after SIGSTOP", time.Since(stoppedAt).Round(time.Millisecond))

	// The parent claims N and issues.
	p := startMinter(t, s, snowfence.SystemClock(), "parent", lease.Range{Lo: n, Hi: n}, time.Millisecond, 10, shortTimings)
	if !pollUntil(10*time.Second, 5*time.Millisecond, func() bool { return p.issued() > 0 }) {
		t.Fatalf("the parent issued nothing on %d: %+v, %v", n, p.k.Status(), p.lastErr())
	}
	parentFirst := p.allIDs()[0]
	parentFirstMs := snowfence.V1().TimeOf(parentFirst).UnixMilli()

	// Wake the child; the line it echoes marks everything after as sent
	// after it woke.
	if err := child.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := child.write("resumed"); err != nil {
		t.Fatal(err)
	}
	after := func(fs []wire.Frame) []wire.Frame {
		for i, f := range fs {
			if f.Kind == wire.KindEcho && f.Text == "resumed" {
				return fs[i+1:]
			}
		}
		return nil
	}
	await("the child reports after waking", 20*time.Second, func(fs []wire.Frame) bool { return len(after(fs)) >= 10 })
	p.halt()
	child.finish(5 * time.Second)

	mu.Lock()
	all := append([]wire.Frame(nil), frames...)
	mu.Unlock()
	woke := after(all)
	if k := count(woke, isIDs); k != 0 {
		t.Errorf("the child issued %d batches after waking, want none: %q", k, woke)
	}
	fenced := func(f wire.Frame) bool { return f.Kind == wire.KindFenced && f.Gen == 0 }
	if k := count(woke, fenced); k == 0 {
		t.Errorf("the child sent no ErrFenced refusal after waking: %q", woke)
	} else {
		t.Logf("after waking the child refused %d times; the first: %q", k, woke[slices.IndexFunc(woke, func(f wire.Frame) bool {
			return f.Kind == wire.KindFenced || f.Kind == wire.KindRefused
		})])
	}
	var childIDs []snowfence.ID
	for _, f := range all {
		if isIDs(f) {
			for _, v := range f.Vals {
				childIDs = append(childIDs, snowfence.ID(v))
			}
		}
	}
	for _, id := range childIDs {
		if m := snowfence.V1().Split(id).Machine; m != n {
			continue // a number re-claimed elsewhere is fine (the range has only n)
		}
		if ms := snowfence.V1().TimeOf(id).UnixMilli(); ms >= parentFirstMs {
			t.Errorf("child ID %d on machine %d stamped %d, not below the parent's first timestamp %d", id, n, ms, parentFirstMs)
		}
	}
	t.Logf("child: %d IDs, parent: %d IDs from %d; %d distinct", len(childIDs), p.issued(), parentFirst,
		checkUnique(t, childIDs, p.allIDs()))
}

// count is how many of frames satisfy is.
func count(frames []wire.Frame, is func(wire.Frame) bool) int {
	k := 0
	for _, f := range frames {
		if is(f) {
			k++
		}
	}
	return k
}

// isIDs reports whether f is a batch of IDs.
func isIDs(f wire.Frame) bool { return f.Kind == wire.KindIDs }
