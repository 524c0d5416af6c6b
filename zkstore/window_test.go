package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

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
	mustClaim(t, st, req("a", 0, 0, time.Now().UnixMilli()))
	if _, err := dial(t, e).Set(path+"/leases/0/0", []byte(`{"epoch":0,"mark_ms":1}`), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), 0); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("read of a znode whose epoch fell: %v; want ErrRestored", err)
	}
	r := req("b", 1, 1, time.Now().UnixMilli())
	r.RestoreWindow = time.Second
	l := mustClaim(t, st, r)
	if floor := r.NowMs + zkstore.MaxRestoreWindow.Milliseconds(); l.StartMs < floor {
		t.Errorf("claim with a 1 s restore window after a noticed restore starts at %s, below the restore floor %s (the claimer's clock "+
			"+ MaxRestoreWindow): a holder the restore cut off may still issue there", lease.FormatMs(l.StartMs), lease.FormatMs(floor))
	}
}
