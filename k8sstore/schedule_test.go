package k8sstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// soon is a schedule whose cutover is a minute away: one lease.SetSchedule
// would refuse (the notice), written here with SetFleetSchedule.
func soon() string {
	return "v1,v2@" + time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// TestClaimInterleavedWithSchedule: a write of the fleet schedule record or
// of the registry between a claim's reads and its write — the claim's
// patch held while the other writes — cannot fail the patch, which tests
// the lease object only; the claim's reads after its write see the change,
// and the claim is refused (lease.ErrSchedule) and given back: no lease is
// handed out, the number is free, and the claim made again is refused too
// (claimcheck.go).
func TestClaimInterleavedWithSchedule(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	for name, write := range map[string]func(ctx context.Context, other *k8sstore.Store) error{
		"SetFleetSchedule": func(ctx context.Context, other *k8sstore.Store) error {
			_, err := other.SetFleetSchedule(ctx, 0, soon())
			return err
		},
		"SetRegistry": func(ctx context.Context, other *k8sstore.Store) error {
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
			cfg := k8sstore.Config{Namespace: ns, Prefix: newPrefix()}
			other := open(t, srv.Config(), cfg)
			p := newParker(t)
			rc := rest.CopyConfig(srv.Config())
			rc.Wrap(p.wrap)
			st := open(t, rc, cfg)
			nowMs := time.Now().UnixMilli()
			// The number gets an object first, so the claim's write is a patch.
			if err := other.Release(t.Context(), mustClaim(t, other, on("setup", 0, nowMs)), nowMs+1); err != nil {
				t.Fatal(err)
			}
			p.armed.Store(true)
			type claimed struct {
				l   *lease.Lease
				err error
			}
			out := make(chan claimed, 1)
			go func() {
				l, err := st.Claim(context.WithoutCancel(t.Context()), on("h", 0, nowMs+2))
				out <- claimed{l, err}
			}()
			select {
			case <-p.parked:
			case <-time.After(30 * time.Second):
				t.Fatal("the claim never reached its patch")
			}
			if err := write(t.Context(), other); err != nil {
				t.Fatalf("the %s while the claim's patch is held: %v", name, err)
			}
			p.let()
			var c claimed
			select {
			case c = <-out:
			case <-time.After(time.Minute):
				t.Fatal("the claim never returned")
			}
			if c.err == nil {
				t.Fatalf("claim with the %s between its read and its write = %+v; want ErrSchedule", name, c.l)
			}
			if !errors.Is(c.err, lease.ErrSchedule) {
				t.Errorf("claim with the %s between its read and its write: %v; want ErrSchedule", name, c.err)
			}
			t.Logf("claim: %v", c.err)
			if rec := mustGetRecord(t, other, 0); rec.Held() {
				t.Errorf("machine 0 after the refused claim: %+v; want it given back", rec)
			}
			if _, err := st.Claim(t.Context(), on("h", 0, nowMs+3)); !errors.Is(err, lease.ErrSchedule) {
				t.Errorf("claim on the default schedule after the %s: %v; want ErrSchedule", name, err)
			}
		})
	}
}
