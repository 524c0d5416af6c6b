package k8sstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// TestCopyRestoreWhileHoldersRun: two holder processes (A, B) hold numbers
// through stores of their own; etcd is copied, they renew on, A claims one
// more number, and etcd is restored under the API server from the copy
// (without --bump-revision) while both keep their stores. Each holder's
// next renewal must fail with ErrRestored — A's record came back with a
// lower mark and resourceVersion, B's too, A's later number is gone — and
// not ride on the restored records. A's next claim starts a restore
// window above its clock, and so does the claim of a process that never
// saw the old state (D), which finds the floor A wrote into the origin.
func TestCopyRestoreWhileHoldersRun(t *testing.T) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	now := time.Now().UnixMilli()
	clk := fakeclock.New(time.UnixMilli(now))
	cfg := k8sstore.Config{Namespace: ns, Clock: clk}
	a, b := open(t, srv.Config(), cfg), open(t, srv.Config(), cfg)

	la := mustExtend(t, a, mustClaim(t, a, on("a", 1, now)), now+10_000)
	lb := mustExtend(t, b, mustClaim(t, b, on("b", 2, now)), now+10_000)
	cp := srv.CopyData(t)
	la = mustExtend(t, a, la, now+20_000)
	lb = mustExtend(t, b, lb, now+20_000)
	lc := mustExtend(t, a, mustClaim(t, a, on("a", 3, now)), now+20_000)

	srv.Restore(t, cp)

	for _, c := range []struct {
		name string
		s    lease.Store
		l    *lease.Lease
	}{{"A on 1", a, la}, {"B on 2", b, lb}, {"A on 3 (made after the copy)", a, lc}} {
		if _, err := extend(t, c.s, c.l, now+30_000); !errors.Is(err, lease.ErrRestored) {
			t.Errorf("%s: renewal after the restore: %v, want ErrRestored", c.name, err)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	floor := now + 1 + k8sstore.MaxRestoreWindow.Milliseconds()
	la2 := mustClaim(t, a, on("a", 4, now+1))
	if la2.StartMs < floor {
		t.Errorf("A's claim after the restore starts at %d, want ≥ its clock + the restore window = %d", la2.StartMs, floor)
	}
	d := open(t, srv.Config(), cfg)
	ld := mustClaim(t, d, on("d", 5, now+2))
	if ld.StartMs < floor {
		t.Errorf("D's claim (a process that saw nothing before the restore) starts at %d, want ≥ the floor in the origin, %d", ld.StartMs, floor)
	}
	t.Logf("after the restore: A's claim starts at %s, D's at %s (floor %s)", lease.FormatMs(la2.StartMs), lease.FormatMs(ld.StartMs), lease.FormatMs(floor))
}

// TestRestoreNoticedByResourceVersionAlone: a restore that takes back only
// a renewal that moved no mark leaves the record as the reader saw it
// before (holder, epoch, claim, mark); only the object's resourceVersion,
// lower than the one the reader saw under the same UID, shows it. The
// reader's next Get must say ErrRestored.
func TestRestoreNoticedByResourceVersionAlone(t *testing.T) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns, Clock: fakeclock.New(time.UnixMilli(now))}
	a, r := open(t, srv.Config(), cfg), open(t, srv.Config(), cfg)
	la := mustExtend(t, a, mustClaim(t, a, on("a", 1, now)), now+10_000)
	cp := srv.CopyData(t)
	mustExtend(t, a, la, now+10_000) // moves no mark: a new renewal value and resourceVersion only
	if _, err := r.Get(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	srv.Restore(t, cp)
	err := settle(t, func(ctx context.Context) error { _, err := r.Get(ctx, 1); return err })
	if !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("the reader's Get after the restore: %v, want ErrRestored", err)
	}
	t.Logf("the reader's Get after the restore: %v", err)
}
