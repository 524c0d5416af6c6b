package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// Schedules on the keepers' fake clock (t0): the cutover to v2 an hour
// before t0 (v2 in force: regions have numbers), and one two hours after.
const (
	schedPast   = "v1,v2@2026-11-29T08:00:00Z"
	schedFuture = "v1,v2@2026-11-29T11:00:00Z"
)

// errClaimReached is what registryStore's Claim answers: StartKeeper asks
// the store for a number only after its registry checks passed.
var errClaimReached = errors.New("the keeper reached its claim")

// registryStore is a lease store that answers only what StartKeeper asks
// before and at its first claim: its copy of the registry (reg), its
// identity, its fleet schedule record, its keyspaces (itself) and the
// claim, which it refuses with errClaimReached (wrapping
// lease.ErrNoFreeNumber, on which StartKeeper gives up at once). The first
// failReads reads of the registry fail.
type registryStore struct {
	lease.Store // nil: only the methods below are called
	reg         *registrytest.Mem
	fleet       lease.FleetSchedule

	mu        sync.Mutex
	failReads int
	reads     int
}

func (s *registryStore) Registry(ctx context.Context) (registry.Registry, error) {
	s.mu.Lock()
	s.reads++
	fail := s.reads <= s.failReads
	s.mu.Unlock()
	if fail {
		return registry.Registry{}, fmt.Errorf("read %d: the store is down", s.reads)
	}
	return s.reg.Registry(ctx)
}

func (s *registryStore) SetRegistry(ctx context.Context, r registry.Registry) error {
	return s.reg.SetRegistry(ctx, r)
}

func (s *registryStore) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.reg.CreateRegistry(ctx, r)
}

func (s *registryStore) RegistryIdentity(ctx context.Context) (string, error) {
	return s.reg.RegistryIdentity(ctx)
}

func (s *registryStore) FleetSchedule(context.Context) (lease.FleetSchedule, error) {
	return s.fleet, nil
}

// RegistryReader returns s: the keeper reads the registry, the identity
// and the record above.
func (s *registryStore) RegistryReader() lease.RegistryReader { return s }

func (s *registryStore) MaxRestoreWindow() time.Duration { return time.Hour }

func (s *registryStore) MaxNoticeWindow() time.Duration { return time.Hour }

func (s *registryStore) Keyspace(int) (lease.Store, error) { return s, nil }

func (s *registryStore) Close() error { return nil }

// Region: the stand-in is region 0's store (startOn gives it others').
func (s *registryStore) Region() int { return 0 }

func (s *registryStore) Claim(context.Context, lease.ClaimRequest) (*lease.Lease, error) {
	return nil, fmt.Errorf("%w (%w)", errClaimReached, lease.ErrNoFreeNumber)
}

// inRegion is st as a store of region's keyspace: the registry stand-in
// serves every region.
type inRegion struct {
	lease.Store
	region int
}

func (s inRegion) Region() int { return s.region }

// startOn starts a keeper of region on st with schedule sched ("" for the
// default) and returns StartKeeper's error: errClaimReached when every
// check before the claim passed.
func startOn(t *testing.T, st lease.Store, region int, sched string) error {
	t.Helper()
	kc := lease.KeeperConfig{Store: inRegion{st, region}, Holder: "h", Range: &lease.Range{Lo: 0, Hi: 0}, Region: region, Clock: fakeclock.New(t0)}
	if sched != "" {
		s, err := snowfence.ParseSchedule(sched)
		if err != nil {
			t.Fatal(err)
		}
		kc.Schedule = s
	}
	k, err := leasetest.StartKeeper(testCtx(t), kc)
	if err == nil {
		k.Close(context.Background(), lease.UnknownIssued)
		t.Fatal("StartKeeper succeeded on a store that refuses every claim")
	}
	return err
}

// When the registry records the fleet schedule, a keeper starts only on
// it, and only where its own store's record agrees; the refusal names the
// command that fixes it. (serve made these checks before issue 25; the
// keeper makes them for every holder.)
func TestKeeperChecksRegistrySchedule(t *testing.T) {
	far := "v1,v2@2099-01-01T00:00:00Z"
	reg := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "us-east-1", Number: 0, CreatedMs: 1}}, Schedule: far}
	noSchedule := reg
	noSchedule.Schedule = ""
	twoNoSchedule := noSchedule
	twoNoSchedule.Regions = []registry.Region{{Name: "us-east-1", Number: 0, CreatedMs: 1}, {Name: "eu-west-1", Number: 1, CreatedMs: 2}}
	oneLeft := twoNoSchedule
	oneLeft.Regions = []registry.Region{{Name: "us-east-1", Number: 0, CreatedMs: 1}, {Name: "eu-west-1", Number: 1, CreatedMs: 2, RetiredMs: 3}}
	for _, c := range []struct {
		name, schedule string
		reg            registry.Registry
		fleet          lease.FleetSchedule
		want           string // "" to reach the claim
	}{
		{"all agree", far, reg, lease.FleetSchedule{Text: far, Version: 1}, ""},
		{"default schedule", "", reg, lease.FleetSchedule{Text: far, Version: 1}, "restart it with --schedule '" + far + "'"},
		{"another cutover", "v1,v2@2098-01-01T00:00:00Z", reg, lease.FleetSchedule{Text: far, Version: 1}, "snowfence schedule set SCHEDULE"},
		{"store missed the change", far, reg, lease.FleetSchedule{Text: "v1"}, "snowfence regions sync"},
		// Not recorded yet: nothing to compare with (its next change
		// records the stores'), as serve never compared it.
		{"registry records none", "v1,v2@2098-01-01T00:00:00Z", noSchedule, lease.FleetSchedule{Text: far, Version: 1}, ""},
		// Two regions in service with none recorded: region 0 on v1 and
		// region 1 on v2 would put v1 machine 128's bits in region 1
		// machine 0's IDs. Nothing keeps their stores' schedules one.
		{"two regions, none recorded", far, twoNoSchedule, lease.FleetSchedule{Text: far, Version: 1}, "records no fleet schedule"},
		// One of them retired: its IDs are all in the past.
		{"one in service, none recorded", far, oneLeft, lease.FleetSchedule{Text: far, Version: 1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &registryStore{reg: &registrytest.Mem{Reg: c.reg}, fleet: c.fleet}
			err := startOn(t, st, 0, c.schedule)
			if c.want == "" {
				if !errors.Is(err, errClaimReached) {
					t.Fatalf("schedule %q: %v; want the keeper to reach its claim", c.schedule, err)
				}
				return
			}
			if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("schedule %q with the store at %q: %v; want ErrSchedule saying %q", c.schedule, c.fleet.Text, err, c.want)
			}
		})
	}
}

// A region that records its home starts only on that copy's store: a
// holder of us-east-1 on the store of copy eu-west-1 (which resolves every
// region too) is refused, naming both stores and what to do; on its home
// store it starts, and a region with no home recorded starts on any.
func TestKeeperRefusesAnotherRegionsStore(t *testing.T) {
	ctx := context.Background()
	far := schedPast // v2 in force: regions have numbers
	fleet := lease.FleetSchedule{Text: far, Version: 1}
	us := &registryStore{reg: &registrytest.Mem{ID: "store us"}, fleet: fleet}
	eu := &registryStore{reg: &registrytest.Mem{ID: "store eu"}, fleet: fleet}
	cs := []registry.Copy{{Name: "us-east-1", Store: us}, {Name: "eu-west-1", Store: eu}}
	for _, add := range []struct{ region, home string }{{"us-east-1", "us-east-1"}, {"eu-west-1", "eu-west-1"}, {"old-style", ""}} {
		if _, err := registry.Update(ctx, cs, func(r registry.Registry) (registry.Registry, error) {
			next, _, err := r.WithRegionHome(add.region, add.home, 1, 8)
			next.Schedule = far
			return next, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	reg, _ := us.Registry(ctx)
	for _, c := range []struct {
		name   string
		store  *registryStore
		region string
		want   []string // nil to start
	}{
		{"us-east-1 on its home store", us, "us-east-1", nil},
		{"eu-west-1 on its home store", eu, "eu-west-1", nil},
		{"us-east-1 on eu-west-1's store", eu, "us-east-1", []string{"leases from copy us-east-1 (store us)", "this holder's store is store eu", "store flags of the region's own store", "no command records a new home"}},
		{"eu-west-1 on us-east-1's store", us, "eu-west-1", []string{"leases from copy eu-west-1"}},
		{"no home recorded", eu, "old-style", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, ok := reg.Named(c.region)
			if !ok {
				t.Fatalf("no region %s in %+v", c.region, reg)
			}
			err := startOn(t, c.store, g.Number, far)
			if c.want == nil {
				if !errors.Is(err, errClaimReached) {
					t.Fatalf("region %s: %v; want the keeper to reach its claim", c.region, err)
				}
				return
			}
			var he *registry.HomeError
			if !errors.Is(err, registry.ErrWrongHome) || !errors.As(err, &he) || he.Region.Name != c.region {
				t.Fatalf("region %s: %v; want ErrWrongHome, a *HomeError of the region", c.region, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("region %s: %q; want it to say %q", c.region, err, w)
				}
			}
		})
	}
}

// Reading the registry is retried like the first claim while the store
// fails; the keeper goes on to its claim once it reads it, and gives up,
// saying why, when the context ends first.
func TestKeeperRetriesRegistryRead(t *testing.T) {
	reg := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "a", Number: 0, CreatedMs: 1}}, Schedule: lease.DefaultFleetSchedule}
	st := &registryStore{reg: &registrytest.Mem{Reg: reg}, fleet: lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, failReads: 3}
	clk := fakeclock.New(t0)
	done := make(chan error, 1)
	started, returned := context.WithCancel(testCtx(t))
	go func() {
		_, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 0, Hi: 0}, Clock: clk})
		done <- err
		returned()
	}()
	for range st.failReads {
		if clk.BlockUntilWaiters(started, 1) != nil {
			break // StartKeeper returned without waiting to read again
		}
		clk.Advance(time.Second) // RenewEvery/4 is 500 ms
	}
	if err := <-done; !errors.Is(err, errClaimReached) || st.reads != st.failReads+1 {
		t.Fatalf("StartKeeper after %d failed reads of the registry: %v after %d reads; want the claim reached after %d", st.failReads, err, st.reads, st.failReads+1)
	}

	down := &registryStore{reg: &registrytest.Mem{Reg: reg}, fleet: lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, failReads: 1 << 30}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := leasetest.StartKeeper(ctx, lease.KeeperConfig{Store: down, Holder: "h", Range: &lease.Range{Lo: 0, Hi: 0}, Clock: fakeclock.New(t0)})
	if err == nil || errors.Is(err, errClaimReached) || !strings.Contains(err.Error(), "the store is down") {
		t.Fatalf("StartKeeper with the registry unreadable and the context ended: %v; want the last read's error", err)
	}
}
