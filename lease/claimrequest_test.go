package lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

func TestClaimRequestCheck(t *testing.T) {
	ok := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 1023}, NowMs: 1790424000000, LeaseFor: 30 * time.Second}
	with := func(f func(*lease.ClaimRequest)) lease.ClaimRequest {
		r := ok
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		req   lease.ClaimRequest
		limit int
	}{
		{"no holder", with(func(r *lease.ClaimRequest) { r.Holder = "" }), lease.Unlimited},
		{"the quarantine holder", with(func(r *lease.ClaimRequest) { r.Holder = lease.QuarantineHolder }), lease.Unlimited},
		{"no clock", with(func(r *lease.ClaimRequest) { r.NowMs = 0 }), lease.Unlimited},
		{"negative clock", with(func(r *lease.ClaimRequest) { r.NowMs = -1 }), lease.Unlimited},
		{"no lease time", with(func(r *lease.ClaimRequest) { r.LeaseFor = 0 }), lease.Unlimited},
		{"negative MaxAhead", with(func(r *lease.ClaimRequest) { r.MaxAhead = -time.Millisecond }), lease.Unlimited},
		{"negative range", with(func(r *lease.ClaimRequest) { r.Range.Lo = -1 }), lease.Unlimited},
		{"empty range", with(func(r *lease.ClaimRequest) { r.Range = lease.Range{Lo: 2, Hi: 1} }), lease.Unlimited},
		{"range past the limit", ok, 1023},
		{"unparsable schedule", with(func(r *lease.ClaimRequest) { r.Schedule = "v3" }), lease.Unlimited},
	} {
		if _, err := tc.req.Check(tc.limit); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: Check(%d) = %v, want ErrInvalid", tc.name, tc.limit, err)
		}
	}
	for _, tc := range []struct {
		name, schedule, want string
		limit                int
	}{
		{"default schedule, no limit", "", "v1", lease.Unlimited},
		{"default schedule, within the limit", "", "v1", 1024},
		{"canonical form", "v1,v2@2036-01-01T00:00:00+00:00", "v1,v2@2036-01-01T00:00:00Z", lease.Unlimited},
	} {
		r := ok
		r.Schedule = tc.schedule
		got, err := r.Check(tc.limit)
		if err != nil || got.Schedule != tc.want {
			t.Errorf("%s: Check(%d) = schedule %q, %v; want %q, nil", tc.name, tc.limit, got.Schedule, err, tc.want)
		}
	}
}

func TestCheckMachine(t *testing.T) {
	for _, tc := range []struct {
		n, limit int
		ok       bool
	}{
		{0, lease.Unlimited, true}, {1 << 20, lease.Unlimited, true}, {-1, lease.Unlimited, false},
		{1023, 1024, true}, {1024, 1024, false}, {-1, 1024, false},
	} {
		if err := lease.CheckMachine(tc.n, tc.limit); (err == nil) != tc.ok || (err != nil && !errors.Is(err, lease.ErrInvalid)) {
			t.Errorf("CheckMachine(%d, %d) = %v, want ok %v (else ErrInvalid)", tc.n, tc.limit, err, tc.ok)
		}
	}
}

func TestFormatMs(t *testing.T) {
	if got, want := lease.FormatMs(1790424000005), "2026-09-26T12:00:00.005Z"; got != want {
		t.Errorf("FormatMs = %q, want %q", got, want)
	}
}
