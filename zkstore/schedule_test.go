package zkstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
	"github.com/snowfence/snowfence/zkstore"
)

// soon is a schedule whose v2 starts a minute from now: one the notice
// rule refuses on a path that holds lease records.
func soon() string {
	return "v1,v2@" + time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// TestScheduleSetAtOnceOnUnusedPath: on a path where no lease record was
// ever written, lease.SetSchedule changes the fleet schedule at once
// (SetFleetScheduleUnused); once any number has a record — even one only
// quarantined — the change needs the notice, and SetFleetScheduleUnused
// refuses with lease.ErrInUse.
func TestScheduleSetAtOnceOnUnusedPath(t *testing.T) {
	e := zktest.Start(t, 1)
	ctx := t.Context()
	st := open(t, e, newPath(t))
	next := soon()
	fs, err := lease.SetSchedule(ctx, st, next, time.Now(), 0)
	if err != nil || fs.Version != 1 {
		t.Fatalf("SetSchedule(%q) on an unused path = %+v, %v; want it set at version 1", next, fs, err)
	}
	r := req("h", 0, 0, time.Now().UnixMilli())
	r.Schedule = next
	mustClaim(t, st, r)

	used := open(t, e, newPath(t))
	if err := used.Quarantine(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.SetSchedule(ctx, used, next, time.Now(), 0); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("SetSchedule(%q) on a path with a quarantined number = %v; want ErrInvalid (the notice)", next, err)
	}
	if _, err := used.SetFleetScheduleUnused(ctx, 0, next); !errors.Is(err, lease.ErrInUse) {
		t.Errorf("SetFleetScheduleUnused on a path with a record = %v; want ErrInUse", err)
	}
	if fs, err := used.FleetSchedule(ctx); err != nil || fs.Version != 0 {
		t.Errorf("FleetSchedule after the refusals = %+v, %v; want version 0", fs, err)
	}
}

// hookedClaim returns a store on path whose first claim runs f after the
// claim's reads, just before its multi-op is sent.
func hookedClaim(t *testing.T, e *zktest.Ensemble, path string, f func(ctx context.Context) error) *zkstore.Store {
	t.Helper()
	st, err := zkstore.NewHooked(dial(t, e), zkstore.Config{Path: path}, func() {
		if err := f(t.Context()); err != nil {
			t.Errorf("the write between the claim's read and its multi-op: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestClaimInterleavedWithSchedule: a write of the fleet schedule record or
// of the registry between a claim's reads and its multi-op fails the
// claim — the multi-op checks the versions it compared — and the claim
// made again sees the change: the first claim of an unused path against
// SetFleetScheduleUnused, a set of the record, a registry that comes to
// record another schedule. No number is left held.
func TestClaimInterleavedWithSchedule(t *testing.T) {
	e := zktest.Start(t, 1)
	for name, write := range map[string]func(ctx context.Context, other *zkstore.Store) error{
		"SetFleetScheduleUnused": func(ctx context.Context, other *zkstore.Store) error {
			_, err := other.SetFleetScheduleUnused(ctx, 0, soon())
			return err
		},
		"SetFleetSchedule": func(ctx context.Context, other *zkstore.Store) error {
			_, err := other.SetFleetSchedule(ctx, 0, soon())
			return err
		},
		"SetRegistry": func(ctx context.Context, other *zkstore.Store) error {
			v1 := registrytest.MustWith(t, registry.Registry{}, "a", 1000)
			if err := other.SetRegistry(ctx, v1); err != nil {
				return err
			}
			v2, err := v1.WithSchedule(soon())
			if err != nil {
				return err
			}
			return other.SetRegistry(ctx, v2)
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := newPath(t)
			other := open(t, e, path)
			st := hookedClaim(t, e, path, func(ctx context.Context) error { return write(ctx, other) })
			nowMs := time.Now().UnixMilli()
			if l, err := st.Claim(t.Context(), req("h", 0, 3, nowMs)); err == nil {
				t.Fatalf("claim with the %s between its read and its write = %v; want an error", name, l)
			}
			if _, err := st.Claim(t.Context(), req("h", 0, 3, nowMs)); !errors.Is(err, lease.ErrSchedule) {
				t.Errorf("claim on the default schedule after the %s: %v; want ErrSchedule", name, err)
			}
			recs, err := other.List(t.Context())
			if err != nil || len(recs) != 0 {
				t.Errorf("List after the refused claims = %+v, %v; want no record", recs, err)
			}
		})
	}
}

// TestExtendInterleavedWithSchedule: a set of the fleet schedule record
// between a renewal's read and its multi-op fails that write (its
// multi-op checks the record's version), and the renewal read again
// refuses a mark past the first instant the new schedule differs from the
// lease's (lease.ErrSchedule).
func TestExtendInterleavedWithSchedule(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	other := open(t, e, path)
	nowMs := time.Now().UnixMilli()
	l := mustClaim(t, other, req("h", 0, 0, nowMs))
	cutover := time.UnixMilli(nowMs).Add(20 * time.Second).UTC().Truncate(time.Second)
	st := hookedClaim(t, e, path, func(ctx context.Context) error {
		_, err := other.SetFleetSchedule(ctx, 0, "v1,v2@"+cutover.Format(time.RFC3339))
		return err
	})
	if nl, err := st.Extend(t.Context(), l, cutover.UnixMilli()+5000, 10*time.Second); !errors.Is(err, lease.ErrSchedule) {
		t.Fatalf("Extend past a cutover set between its read and its write = %+v, %v; want ErrSchedule", nl, err)
	}
	if rec := leasetest.MustGet(t, other, 0); rec.MarkMs != l.MarkMs {
		t.Errorf("mark after the refused renewal %d; want the claim's %d", rec.MarkMs, l.MarkMs)
	}
	leasetest.MustExtend(t, other, l, cutover.UnixMilli()-1000, 10*time.Second)
}
