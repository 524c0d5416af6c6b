package zkstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// req is a claim request for holder on numbers lo to hi at the claimer's
// clock nowMs, with a 10 s lease.
func req(holder string, lo, hi int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: lo, Hi: hi}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
}

// pump and settle are the attack kit's (attackkit_test.go, export_test.go).
var (
	pump   = zkstore.Pump
	settle = zkstore.Settle
)

// coldCopy stops every server of e, copies their data directories and
// starts them again.
func coldCopy(e *zktest.Ensemble) *zktest.Copy {
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	return cp
}

// restoreAndPump puts every server of e back to the cold copy cp and pumps
// the zxid past the old sessions' (pump), so they are served again.
func restoreAndPump(t *testing.T, e *zktest.Ensemble, cp *zktest.Copy, path string) {
	t.Helper()
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
	pump(t, e, path+"-pump", 50)
}

// renewUnmovedSeen renews a through as without moving its mark — a write
// only the znode's data version shows — and has ds read machine 1 after
// it, both retried while the sessions reconnect after the copy.
func renewUnmovedSeen(t *testing.T, as, ds *zkstore.Store, a *lease.Lease) *lease.Lease {
	t.Helper()
	if err := settle(t, func(ctx context.Context) error {
		var err error
		a, err = as.Extend(ctx, a, a.MarkMs, 10*time.Second) // a renewal value, no mark moved
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := settle(t, func(ctx context.Context) error { _, err := ds.Get(ctx, 1); return err }); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestEnsembleRestoreNoticed plays a backup restore of a three-server
// ensemble — all stopped, their data directories put back to a cold copy,
// started again — behind the back of running holders. A renewed after
// the copy; D read A's number after a renewal that moved no mark (only
// the znode's version shows it); O holds a number the restore left as it
// was. After the restore A's renewal gets ErrRestored (its own mark fell),
// D's read gets ErrRestored (the znode's data version fell), O's lease is
// fenced because O's store is A's, and the next claim through A's store
// starts a restore window ahead and writes that floor into the origin
// znode, where a fresh process that saw nothing finds it.
func TestEnsembleRestoreNoticed(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 3)
	path := newPath(t)
	as, ds := open(t, e, path), open(t, e, path)
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, as, req("a", 1, 1, nowMs))
	a, err := as.Extend(t.Context(), a, nowMs+10_000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	o := mustClaim(t, as, req("o", 2, 2, nowMs))
	if o, err = as.Extend(t.Context(), o, nowMs+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	cp := coldCopy(e)
	a = renewUnmovedSeen(t, as, ds, a)
	if a, err = as.Extend(t.Context(), a, nowMs+20_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	restoreAndPump(t, e, cp, path)

	if err := settle(t, func(ctx context.Context) error { _, err := ds.Get(ctx, 1); return err }); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("D's read of a znode whose data version fell: %v, want ErrRestored", err)
	}
	if err := settle(t, func(ctx context.Context) error {
		_, err := as.Extend(ctx, a, nowMs+30_000, 10*time.Second)
		return err
	}); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("A's renewal after the restore took back its mark: %v, want ErrRestored", err)
	}
	if _, err := as.Extend(t.Context(), o, nowMs+30_000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("O's renewal, claimed before A's store noticed: %v, want ErrRestored", err)
	}
	at := time.Now().UnixMilli()
	c := mustClaim(t, as, req("c", 3, 3, at))
	if want := at + zkstore.MaxRestoreWindow.Milliseconds(); c.StartMs < want {
		t.Errorf("claim after the restore was noticed starts at %d, want ≥ %d (the claimer's clock + the restore window)", c.StartMs, want)
	}
	fresh := open(t, e, path)
	f := mustClaim(t, fresh, req("f", 4, 4, at))
	if f.StartMs < c.StartMs {
		t.Errorf("a fresh process's claim starts at %d, below the restore floor %d written into the origin znode", f.StartMs, c.StartMs)
	}
}

// TestRestoreRegionShrunk: the restore takes away a number first claimed
// after the copy, outside every range D reads. D's next claim lists the
// region, whose children's version fell: a restore, though no record D
// read shows one, and D's claim starts a restore window ahead.
func TestRestoreRegionShrunk(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := newPath(t)
	ds, xs := open(t, e, path), open(t, e, path)
	nowMs := time.Now().UnixMilli()
	mustClaim(t, ds, req("d", 0, 0, nowMs))
	cp := coldCopy(e)
	if err := settle(t, func(ctx context.Context) error { _, err := xs.Claim(ctx, req("x", 5, 5, nowMs)); return err }); err != nil {
		t.Fatal(err)
	}
	if err := settle(t, func(ctx context.Context) error { _, err := ds.Claim(ctx, req("d", 1, 1, nowMs)); return err }); err != nil {
		t.Fatal(err)
	}
	restoreAndPump(t, e, cp, path)
	at := time.Now().UnixMilli()
	var l *lease.Lease
	if err := settle(t, func(ctx context.Context) error {
		var err error
		l, err = ds.Claim(ctx, req("d", 6, 6, at))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := at + zkstore.MaxRestoreWindow.Milliseconds(); l.StartMs < want {
		t.Errorf("D's claim after the region lost a child starts at %d, want ≥ %d (its clock + the restore window)", l.StartMs, want)
	}
}

// TestClaimChecksOrigin: a restore floor written into the origin znode
// between a claim's read of it and its write (by a process that noticed a
// restore) fails the claim, to be retried; the claim does not commit below
// the floor, and the retry starts above it.
func TestClaimChecksOrigin(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	mustClaim(t, open(t, e, path), req("first", 0, 0, time.Now().UnixMilli())) // makes the origin
	raw := dial(t, e)
	nowMs := time.Now().UnixMilli()
	floor := nowMs + zkstore.MaxRestoreWindow.Milliseconds()
	st, err := zkstore.NewHooked(dial(t, e), zkstore.Config{Path: path}, func() {
		data, stat, err := raw.Get(path + "/origin")
		if err != nil {
			t.Error(err)
			return
		}
		var o map[string]any
		if err := json.Unmarshal(data, &o); err != nil {
			t.Error(err)
			return
		}
		o["floor_ms"] = floor
		b, _ := json.Marshal(o)
		if _, err := raw.Set(path+"/origin", b, stat.Version); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := st.Claim(t.Context(), req("a", 1, 1, nowMs)); err == nil {
		t.Fatalf("claim whose origin changed between its read and its write: %+v, want an error to retry", l)
	}
	if rec, err := st.Get(t.Context(), 1); err != nil || rec.Held() {
		t.Fatalf("number 1 after the refused claim: %+v, %v; want it unclaimed", rec, err)
	}
	if l := mustClaim(t, st, req("a", 1, 1, nowMs)); l.StartMs < floor {
		t.Errorf("the retried claim starts at %d, below the floor %d in the origin znode", l.StartMs, floor)
	}
}
