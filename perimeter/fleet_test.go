package perimeter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/server"
)

// fleetCallers gives orders 3,000 IDs/s in bursts of 3,000 across the
// fleet.
const fleetCallers = `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 3000, "burst": 3000}}}`

// greedy takes batches of batch IDs for orders every step for steps steps
// on the fake clock, as fast as the bucket allows, and returns how many it
// was granted.
func greedy(t *testing.T, r *rig, batch, steps int, step time.Duration) int {
	t.Helper()
	req := requestFrom(r, orders)
	got := 0
	for range steps {
		for {
			g, err := r.p.Take(req, batch)
			if err != nil {
				var qe *server.QuotaError
				if !errors.As(err, &qe) {
					t.Fatalf("Take: %v, want granted or a QuotaError", err)
				}
				break
			}
			g.Done(true)
			got += batch
		}
		r.clock.Advance(step)
	}
	return got
}

// TestQuotaDividedAmongHolders: with three live holders each enforces a
// third of the caller's rate and burst, so one caller that reaches all
// three takes the quota, not three times it.
func TestQuotaDividedAmongHolders(t *testing.T) {
	r := newRig(t, fleetCallers, nil)
	r.p.SetHolders(3)
	// 10 s: the third of the burst (1,000) at once, then 1,000 IDs/s.
	if got, want := greedy(t, r, 100, 101, 100*time.Millisecond), 1000+10*1000; got != want {
		t.Fatalf("one holder of three granted %d IDs in 10 s, want %d (a third of 3,000 IDs/s and of the burst)", got, want)
	}
	if got := r.p.Holders(); got != 3 {
		t.Errorf("Holders() = %d, want 3", got)
	}
}

// TestQuotaShareKeepsLargestBatch: a burst whose share would fall below
// the largest batch stays at MinBurst, so a batch of 1,000 is still
// possible at every holder; the rate is still divided.
func TestQuotaShareKeepsLargestBatch(t *testing.T) {
	r := newRig(t, `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 3000, "burst": 1000}}}`, nil)
	r.p.SetHolders(3)
	if got, want := greedy(t, r, 1000, 21, 500*time.Millisecond), 1000+10*1000; got != want {
		t.Fatalf("granted %d IDs in batches of 1,000 over 10 s, want %d", got, want)
	}
}

// TestHoldersChangeNeitherRefillsNorOverfills: a change of the count
// keeps a bucket's tokens (a bucket emptied stays empty), a smaller share
// cuts what it holds to the new burst, and a larger one refills at the new
// rate from what it held, never at once.
func TestHoldersChangeNeitherRefillsNorOverfills(t *testing.T) {
	r := newRig(t, fleetCallers, nil)
	req := requestFrom(r, orders)
	take := func(n int) bool {
		g, err := r.p.Take(req, n)
		if err != nil {
			return false
		}
		g.Done(true)
		return true
	}
	// A full bucket of 3,000 with one holder; three holders cut it to 1,000.
	r.p.SetHolders(3)
	if !take(1000) || take(1) {
		t.Fatal("three holders: want exactly the share's burst of 1,000 from a full bucket")
	}
	// Back to one holder: nothing comes back at once.
	r.p.SetHolders(1)
	if take(1) {
		t.Fatal("a fall in the count refilled the bucket")
	}
	// One second at the whole rate: 3,000.
	r.clock.Advance(time.Second)
	if !take(3000) || take(1) {
		t.Fatal("one holder after 1 s: want 3,000 exactly")
	}
	// A count of 0 or less (a store that lists nobody yet) is one holder.
	r.p.SetHolders(0)
	if got := r.p.Holders(); got != 1 {
		t.Errorf("SetHolders(0): Holders() = %d, want 1", got)
	}
}

// TestHoldersShareSurvivesReload: a callers file reloaded while three
// holders share the quota takes effect as its third, and an unlisted
// caller first seen after the count changed gets the share too.
func TestHoldersShareSurvivesReload(t *testing.T) {
	r := newRig(t, fleetCallers, nil)
	r.p.SetHolders(3)
	if err := r.writeCallers(`{"default": {"rate": 6000, "burst": 6000}, "callers": {"spiffe://corp/orders": {"rate": 6000, "burst": 6000}}}`); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(10 * time.Second) // refill to the new burst's share
	if got, want := greedy(t, r, 100, 11, 100*time.Millisecond), 2000+1*2000; got != want {
		t.Fatalf("after the reload, granted %d IDs in 1 s, want %d (a third of 6,000/s and of the burst)", got, want)
	}
	req := requestFrom(r, "spiffe://corp/newcomer")
	n := 0
	for {
		g, err := r.p.Take(req, 100)
		if err != nil {
			break
		}
		g.Done(true)
		n += 100
	}
	if n != 2000 {
		t.Errorf("an unlisted caller first seen with three holders took %d at once, want its share of the burst, 2000", n)
	}
}

// TestQuotaShareMessage: a refusal by a holder of three says the limit is
// its share of the caller's quota, and among how many holders.
func TestQuotaShareMessage(t *testing.T) {
	r := newRig(t, fleetCallers, nil)
	r.p.SetHolders(3)
	req := requestFrom(r, orders)
	g, err := r.p.Take(req, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g.Done(true)
	_, err = r.p.Take(req, 1)
	var qe *server.QuotaError
	if !errors.As(err, &qe) {
		t.Fatalf("Take after the share's burst: %v, want a QuotaError", err)
	}
	want := "this holder's share of the caller's quota is 1000 IDs per second in bursts of up to 1000 (the quota divided among the 3 holders of the fleet)"
	if !strings.Contains(qe.Message, want) {
		t.Errorf("message %q, want it to say %q", qe.Message, want)
	}
	if qe.Policy != `"ids";q=1000;w=1` {
		t.Errorf("RateLimit-Policy %q, want this holder's bucket: \"ids\";q=1000;w=1", qe.Policy)
	}
}
