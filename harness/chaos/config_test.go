package chaos

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
)

// boxes are every timingBox the scenarios draw in.
var boxes = []timingBox{fastBox, steadyBox, tableSteadyBox, netBox, tableBox}

// boxesOn are the boxes drawn on a store of kind.
func boxesOn(kind string) []timingBox {
	var out []timingBox
	for _, b := range boxes {
		if !b.tablesOnly || kind != StoreEtcd {
			out = append(out, b)
		}
	}
	return out
}

// kindOf is a store a box is drawn on.
func kindOf(b timingBox) string {
	if b.tablesOnly {
		return StorePostgres
	}
	return StoreEtcd
}

// drawAll draws what a scenario could: each box's timings, three ranges and
// two counts.
func drawAll(t *testing.T, kind, id string, seed uint64) Config {
	t.Helper()
	d := newDrawer(kind, id, seed)
	for _, b := range boxesOn(kind) {
		if _, err := d.timingsFor(b, b.name); err != nil {
			t.Fatalf("seed %d, %s: %v", seed, b.name, err)
		}
	}
	d.fixedMachines("worker", "17-17")
	for _, who := range []string{"services", "library holder", "pair"} {
		if _, err := d.machines(who, 1, 64); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	d.count("services", 4, 8)
	d.count("generators", 1, 3)
	return d.cfg
}

// TestConfigDeterministic: one seed and scenario draw one configuration;
// another scenario id or seed draws another.
func TestConfigDeterministic(t *testing.T) {
	a, b := drawAll(t, StoreEtcd, "4", 3), drawAll(t, StoreEtcd, "4", 3)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 3 drew twice differently:\n%s\n%s", a, b)
	}
	if c := drawAll(t, StoreEtcd, "4", 4); reflect.DeepEqual(a.Timings, c.Timings) {
		t.Errorf("seeds 3 and 4 drew the same timings: %s", a)
	}
	if c := drawAll(t, StoreEtcd, "6", 3); reflect.DeepEqual(a.Timings, c.Timings) {
		t.Errorf("scenarios 4 and 6 drew the same timings under one seed: %s", a)
	}
}

// TestConfigDrawsAccepted: every draw, on every store, within its box and
// accepted by the product's checks; ranges apart and within 0–1023.
func TestConfigDrawsAccepted(t *testing.T) {
	for _, kind := range Stores() {
		for seed := uint64(1); seed <= 40; seed++ {
			d := newDrawer(kind, "x", seed)
			for _, b := range boxesOn(kind) {
				tm, err := d.timingsFor(b, b.name)
				if err != nil {
					t.Fatalf("%s seed %d: %v", kind, seed, err)
				}
				if err := accepts(kind, tm, "0-1023"); err != nil {
					t.Errorf("%s seed %d: %s draw %+v refused: %v", kind, seed, b.name, tm, err)
				}
				if tm.LeaseFor < b.leaseLo || tm.LeaseFor > b.leaseHi || tm.SelfFence < b.fenceLo || tm.SelfFence > b.fenceHi ||
					tm.RenewEvery < b.renewMin || tm.RenewEvery > tm.SelfFence/2+50*time.Millisecond ||
					tm.Margin < 0 || tm.Margin > tm.LeaseFor-tm.SelfFence || (b.noMargin && tm.Margin != 0) {
					t.Errorf("%s seed %d: %s draw %+v outside its box", kind, seed, b.name, tm)
				}
			}
			var got [][2]int
			for range 6 {
				s, err := d.machines("m", 1, 64)
				if err != nil {
					t.Fatal(err)
				}
				r, err := lease.ParseRange(s)
				if err != nil || r.Lo < 0 || r.Hi > 1023 {
					t.Fatalf("range %q: %v", s, err)
				}
				for _, o := range got {
					if r.Lo <= o[1] && o[0] <= r.Hi {
						t.Errorf("seed %d: range %s overlaps %d-%d", seed, s, o[0], o[1])
					}
				}
				got = append(got, [2]int{r.Lo, r.Hi})
			}
		}
	}
}

// TestAcceptsRefuses: the check the draws pass is the product's, and it
// refuses what the keeper refuses — so that a draw outside what the
// product accepts could not pass it.
func TestAcceptsRefuses(t *testing.T) {
	ok := lease.Timings{LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 1500 * time.Millisecond}
	if err := accepts(StoreEtcd, ok, "0-0"); err != nil {
		t.Fatalf("the former fixed timings refused: %v", err)
	}
	if err := accepts(StoreEtcd, etcdstore.Timings(), "0-1023"); err != nil {
		t.Fatalf("etcd's own timings refused: %v", err)
	}
	for name, tc := range map[string]struct {
		t        lease.Timings
		machines string
	}{
		"self-fence near the TTL":    {lease.Timings{LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 2600 * time.Millisecond}, "0-0"},
		"renewal at the self-fence":  {lease.Timings{LeaseFor: 3 * time.Second, RenewEvery: 1500 * time.Millisecond, SelfFence: 1500 * time.Millisecond}, "0-0"},
		"margin at the reservation":  {lease.Timings{LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 1500 * time.Millisecond, Margin: 3 * time.Second}, "0-0"},
		"restore window past etcd's": {lease.Timings{LeaseFor: time.Minute, RenewEvery: time.Second, SelfFence: 5 * time.Second}, "0-0"},
		"notice window past etcd's":  {lease.Timings{LeaseFor: 30 * time.Second, RenewEvery: time.Second, SelfFence: 7 * time.Second}, "0-0"},
		"range past the layout":      {ok, "1000-1100"},
		"range backwards":            {ok, "9-3"},
	} {
		err := accepts(StoreEtcd, tc.t, tc.machines)
		if err == nil {
			t.Errorf("%s: %+v %s accepted", name, tc.t, tc.machines)
			continue
		}
		if errors.Is(err, errChecksPassed) {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	// A minute's lease is refused on etcd (its restore window), accepted
	// on the tables.
	long := lease.Timings{LeaseFor: time.Minute, RenewEvery: time.Second, SelfFence: 5 * time.Second}
	if err := accepts(StorePostgres, long, "0-0"); err != nil {
		t.Errorf("postgres refused %+v: %v", long, err)
	}
}

// TestConfigVaries: across seeds each box draws many configurations, not
// one (and not the defaults); the product's checks refuse some draws (the
// box reaches past what it accepts) but not nearly all.
func TestConfigVaries(t *testing.T) {
	defaults := map[lease.Timings]bool{etcdstore.Timings(): true, lease.TableTimings(): true,
		{LeaseFor: fastTTL, RenewEvery: fastRenew, SelfFence: fastSelfFence}: true}
	for _, b := range boxes {
		seen := map[lease.Timings]bool{}
		ttls, fences := map[time.Duration]bool{}, map[time.Duration]bool{}
		refused := 0
		const seeds = 100
		for seed := uint64(1); seed <= seeds; seed++ {
			d := newDrawer(kindOf(b), "x", seed)
			tm, err := d.timingsFor(b, b.name)
			if err != nil {
				t.Fatal(err)
			}
			seen[tm] = true
			ttls[tm.LeaseFor], fences[tm.SelfFence] = true, true
			refused += d.cfg.Refused
		}
		nDefault := 0
		for tm := range seen {
			if defaults[tm] {
				nDefault++
			}
		}
		t.Logf("%s: %d distinct timings in %d seeds (%d TTLs, %d self-fences), %d draws refused", b.name, len(seen), seeds, len(ttls), len(fences), refused)
		if len(seen) < seeds/2 || len(ttls) < 5 || len(fences) < 5 || nDefault > 1 {
			t.Errorf("%s: %d distinct timings (%d TTLs, %d self-fences, %d defaults) in %d seeds: the draw collapsed", b.name, len(seen), len(ttls), len(fences), nDefault, seeds)
		}
		if b.name != netBox.name && b.name != tableBox.name {
			if refused == 0 || refused > 3*seeds {
				t.Errorf("%s: %d draws refused in %d seeds: want some (the box reaches past the keeper's checks), not most", b.name, refused, seeds)
			}
		}
	}
	ranges := map[string]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		s, err := newDrawer(StoreEtcd, "x", seed).machines("m", 1, 64)
		if err != nil {
			t.Fatal(err)
		}
		ranges[s] = true
	}
	if len(ranges) < 40 {
		t.Errorf("%d distinct machine ranges in 50 seeds", len(ranges))
	}
}

// TestShortZooKeeperRestoreBound: the short mode's test bound carries a
// reserve on ZooKeeper and Kubernetes only (the stores that honour it),
// covering every box the short mode draws on a table, so that 12d's and
// 13d's restore window is 14.2 s there; every draw of those boxes is accepted within it, and a
// lease past the reserve is refused. PostgreSQL and DynamoDB, and the long
// mode, keep the stores' 6 min.
func TestShortZooKeeperRestoreBound(t *testing.T) {
	for _, kind := range []string{StorePostgres, StoreDynamoDB, StoreZooKeeper, StoreKubernetes} {
		for _, long := range []bool{false, true} {
			e := &Env{short: !long, opts: Options{Store: kind, Long: long}}
			want := maxRestoreWindow(kind)
			if (kind == StoreZooKeeper || kind == StoreKubernetes) && !long {
				want = lease.RestoreWindow(shortTableMaxReserve, shortTableMaxSelfFence)
			}
			if got := e.restoreWindow(); got != want {
				t.Errorf("%s (long %v): restore window %v, want %v", kind, long, got, want)
			}
		}
	}
	if w := lease.RestoreWindow(shortTableMaxReserve, shortTableMaxSelfFence); w != 14200*time.Millisecond {
		t.Errorf("the short mode's restore window on ZooKeeper is %v, want 14.2 s (the docs say so)", w)
	}
	e := &Env{short: true, opts: Options{Store: StoreZooKeeper}}
	for _, b := range []timingBox{fastBox, netBox, tableBox} {
		if b.leaseHi > shortTableMaxReserve || b.fenceHi > shortTableMaxSelfFence {
			t.Errorf("%s box (lease ≤ %v, self-fence ≤ %v) outside the short mode's bound on ZooKeeper (%v, %v)",
				b.name, b.leaseHi, b.fenceHi, shortTableMaxReserve, shortTableMaxSelfFence)
		}
		for seed := uint64(1); seed <= 20; seed++ {
			d := newDrawer(StoreZooKeeper, "12d", seed)
			d.notice, d.window = lease.NoticeWindow(e.tableMaxSelfFence()), e.restoreWindow()
			if _, err := d.timingsFor(b, b.name); err != nil {
				t.Errorf("seed %d, %s box on ZooKeeper's short bound: %v", seed, b.name, err)
			}
		}
	}
	past := lease.Timings{LeaseFor: shortTableMaxReserve + time.Second, RenewEvery: time.Second, SelfFence: 5 * time.Second}
	if err := acceptsWithin(e.restoreWindow(), lease.NoticeWindow(shortTableMaxSelfFence), past, "0-0"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a %v lease within ZooKeeper's short restore window %v: %v, want refused", past.LeaseFor, e.restoreWindow(), err)
	}
}
