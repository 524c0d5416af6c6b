package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRestoreFencesEarlierLeases restores etcd from a snapshot taken while
// lease a was held and before lease b was claimed. Both are fenced with
// ErrRestored — a, whose owner key survived in the restored data, too — and
// a claim afterwards starts RestoreMargin after the restore was noticed.
func TestRestoreFencesEarlierLeases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts etcdtest.RestoreOptions
	}{
		{"revision falls", etcdtest.RestoreOptions{}},
		{"cluster ID changes", etcdtest.RestoreOptions{NewClusterToken: true, RevisionBump: 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := etcdtest.Start(t, 1)
			s := newStore(t, c.Client(t), etcdstore.Config{RestoreMargin: time.Minute})
			now := baseMs()
			a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 0, 0, now)), now+1000)
			snap := c.Snapshot(t)
			b := mustExtend(t, s, leasetest.MustClaim(t, s, req("b", 1, 1, now)), now+1000)
			for i := range 5 {
				a = mustExtend(t, s, a, now+2000+int64(i))
			}
			c.Restore(t, snap, tc.opts)
			restored := time.Now()

			_, err := s.Extend(ctxFor(t), a, now+3000, 10*time.Second)
			if !errors.Is(err, lease.ErrRestored) {
				t.Fatalf("Extend of a lease claimed before the restore: %v, want ErrRestored", err)
			}
			t.Logf("operator sees: %v", err)
			if err := s.Release(ctxFor(t), b, now); !errors.Is(err, lease.ErrRestored) {
				t.Errorf("Release of a lease claimed before the restore: %v, want ErrRestored", err)
			}
			if _, err := s.Extend(ctxFor(t), b, now+3000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
				t.Errorf("Extend of a lease lost by the restore: %v, want ErrRestored", err)
			}
			l := leasetest.MustClaim(t, s, req("c", 2, 2, now))
			if floor := restored.Add(time.Minute).UnixMilli(); l.StartMs < floor {
				t.Errorf("claim after the restore starts at %d, want ≥ %d (noticed + RestoreMargin)", l.StartMs, floor)
			}
			mustExtend(t, s, l, l.StartMs+1000) // leases of the new history work
		})
	}
}

// TestRestoreInvisibleNeedsRaiseMarks: a restore that keeps the cluster
// token and bumps the revision cannot be noticed by holders. A number
// claimed after the snapshot comes back free with its old mark, and only
// the operator's RaiseMarks keeps its next holder above what the lost
// holder issued — the runbook's step.
func TestRestoreInvisibleNeedsRaiseMarks(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Client(t), etcdstore.Config{})
	now := baseMs()
	snap := c.Snapshot(t)
	lost := mustExtend(t, s, leasetest.MustClaim(t, s, req("lost", 0, 0, now)), now+5000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})

	if _, err := s.Extend(ctxFor(t), lost, now+6000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Extend of a lease the invisible restore dropped: %v, want ErrLost", err)
	}
	fresh := newStore(t, c.Client(t), etcdstore.Config{})
	if rec := leasetest.MustGet(t, fresh, 0); rec.MarkMs >= lost.MarkMs {
		t.Fatalf("restored mark %d, want below the lost holder's %d (else this test shows nothing)", rec.MarkMs, lost.MarkMs)
	}
	if n, err := fresh.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 63}, lost.MarkMs); err != nil || n != 64 {
		t.Fatalf("RaiseMarks = %d, %v; want 64, nil", n, err)
	}
	if l := leasetest.MustClaim(t, fresh, req("next", 0, 0, now)); l.StartMs < lost.MarkMs {
		t.Errorf("claim after RaiseMarks starts at %d, want ≥ the lost holder's mark %d", l.StartMs, lost.MarkMs)
	}
}
