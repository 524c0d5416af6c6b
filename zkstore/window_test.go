package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// epochFell has st claim machine 0, writes its lease znode back by hand
// with a lower epoch (a restore's data) and has st notice it on a read.
func epochFell(t *testing.T, e *zktest.Ensemble, st *zkstore.Store, path string) {
	t.Helper()
	mustClaim(t, st, req("a", 0, 0, time.Now().UnixMilli()))
	if _, err := dial(t, e).Set(path+"/leases/0/0", []byte(`{"epoch":0,"mark_ms":1}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), 0); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("read of a znode whose epoch fell: %v; want ErrRestored", err)
	}
}

// TestRestoreFloorKeepsTheLongestWindow: once a Store noticed that the
// data went back (here a lease znode written back by hand with a lower
// epoch), a claim asking for a short restore window (1 s) still starts at
// least MaxRestoreWindow past the claimer's clock: the holders the restore
// cut off may be other processes, with longer timings than the claimer's,
// still issuing for up to their own window.
func TestRestoreFloorKeepsTheLongestWindow(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	st := open(t, e, path)
	epochFell(t, e, st, path)
	r := req("b", 1, 1, time.Now().UnixMilli())
	r.RestoreWindow = time.Second
	l := mustClaim(t, st, r)
	if floor := r.NowMs + zkstore.MaxRestoreWindow.Milliseconds(); l.StartMs < floor {
		t.Errorf("claim with a 1 s restore window after a noticed restore starts at %s, below the restore floor %s (the claimer's clock "+
			"+ MaxRestoreWindow): a holder the restore cut off may still issue there", lease.FormatMs(l.StartMs), lease.FormatMs(floor))
	}
}

// TestRestoreFloorTestBound: a test fleet's bound with a reserve shortens
// the restore floor to its window (lease.RestoreWindow of the bound), which
// every holder of the fleet is refused a longer one than — seconds, not
// MaxRestoreWindow's 6 min — and the floor still keeps that window.
func TestRestoreFloorTestBound(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	b := testbound.Of(6 * time.Second).WithMaxReserve(12 * time.Second)
	st, err := zkstore.New(dial(t, e), zkstore.Config{Path: path, TestBound: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	epochFell(t, e, st, path)
	r := req("b", 1, 1, time.Now().UnixMilli())
	r.RestoreWindow = time.Second
	l := mustClaim(t, st, r)
	w := lease.RestoreWindow(12*time.Second, 6*time.Second)
	if floor := r.NowMs + w.Milliseconds(); l.StartMs < floor {
		t.Errorf("claim after a noticed restore starts at %s, below the bound's restore floor %s (the claimer's clock + %v)",
			lease.FormatMs(l.StartMs), lease.FormatMs(floor), w)
	}
	if long := r.NowMs + time.Minute.Milliseconds(); l.StartMs > long {
		t.Errorf("claim after a noticed restore starts at %s, past %s: the test bound did not shorten the 6-minute floor", lease.FormatMs(l.StartMs), lease.FormatMs(long))
	}
}
