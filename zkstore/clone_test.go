package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestCloneRenewsNoMore: a copy of a holder process taken while it held
// a lease (a VM snapshot resumed, a forked image) renews and releases
// through a Store value of its own, holding the lease as it was at the
// copy. Once the original renewed since, the copy's renewal must fail
// with lease.ErrLost — the record holds a renewal value the copy never
// wrote — and so must its release, leaving the original's lease and mark:
// renewed, the copy would issue beside the original on one number for as
// long as both run.
func TestCloneRenewsNoMore(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	orig, clone := open(t, e, path), open(t, e, path)
	nowMs := time.Now().UnixMilli()
	l := leasetest.MustExtend(t, orig, mustClaim(t, orig, req("cloned", 0, 0, nowMs)), nowMs+10_000, 10*time.Second)
	cl := *l // the copy's lease, as it was when the process was copied
	won := leasetest.MustExtend(t, orig, l, nowMs+20_000, 10*time.Second)
	if nl, err := clone.Extend(t.Context(), &cl, nowMs+30_000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("DUPLICATE RENEWAL: a copy of the holder renewed machine 0 beside the original (%+v, %v); want ErrLost — "+
			"both issue on one number under one claim", nl, err)
	}
	if err := clone.Release(t.Context(), &cl, cl.StartMs); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the copy's release after the original renewed: %v; want ErrLost", err)
	}
	if rec := leasetest.MustGet(t, orig, 0); !rec.Held() || rec.MarkMs != won.MarkMs || rec.Renewal != won.Renewal {
		t.Errorf("record after the copy's renewal and release = %+v; want the original's lease, mark %d renewal %q", rec, won.MarkMs, won.Renewal)
	}
	leasetest.MustExtend(t, orig, won, nowMs+30_000, 10*time.Second)
}
