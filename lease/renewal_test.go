package lease_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// Renewals accepts the values its Store value wrote or sent for a claim,
// takes a value it wrote before its last acknowledged one for a store gone
// back in time (no clone can write one), and anything else for a second
// process renewing the same claim.
func TestRenewalsCheck(t *testing.T) {
	var r lease.Renewals
	l := &lease.Lease{Machine: 7, Token: 3, Holder: "h", Claim: "c"} // just claimed: no value
	check := func(what, stored string, want error) {
		t.Helper()
		err := r.Check(l, stored)
		if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: Check(%q) = %v, want %v", what, stored, err, want)
		}
	}
	check("the claim's state", "", nil)
	check("a value never written", lease.NewNonce(), lease.ErrLost)

	v1 := r.Next(l)
	check("a value sent, reply lost", v1, nil)
	check("still the claim's state", "", nil)
	r.Acked(l, v1)
	l.Renewal = v1
	check("the value acknowledged", v1, nil)
	check("the claim's state after a renewal", "", lease.ErrRestored)

	v2, v3 := r.Next(l), r.Next(l)
	check("first of two sent", v2, nil)
	check("second of two sent", v3, nil)
	if got := r.Accepted(l); len(got) != 3 {
		t.Errorf("Accepted = %q, want the lease's value and the two sent", got)
	}
	r.Acked(l, v3)
	l.Renewal = v3
	check("sent before the value acknowledged", v2, lease.ErrRestored)
	check("acknowledged before the value acknowledged", v1, lease.ErrRestored)
	check("another process's", lease.NewNonce(), lease.ErrLost)

	other := &lease.Lease{Machine: 7, Token: 3, Holder: "h", Claim: "another claim", Renewal: v3}
	if err := r.Check(other, v2); !errors.Is(err, lease.ErrLost) {
		t.Errorf("another claim's lease: Check(%q) = %v, want ErrLost: values are remembered per claim", v2, err)
	}

	r.Forget(l)
	check("after Forget, the lease's own value", v3, nil)
	check("after Forget, a value from before", v1, lease.ErrLost)

	// The values sent are bounded: the oldest are forgotten first.
	first := r.Next(l)
	for range 40 {
		r.Next(l)
	}
	check("a value sent long before, dropped", first, lease.ErrLost)
}

// Own, what a release compares with, holds Accepted and every value the
// Store value wrote or sent for the claim before its last acknowledged one
// (a record put back to one of them is released), and no other process's.
func TestRenewalsOwn(t *testing.T) {
	var r lease.Renewals
	l := &lease.Lease{Machine: 7, Token: 3, Holder: "h", Claim: "c"}
	v1 := r.Next(l)
	r.Acked(l, v1)
	l.Renewal = v1
	v2 := r.Next(l)
	r.Acked(l, v2)
	l.Renewal = v2
	v3 := r.Next(l) // sent, reply lost
	own := r.Own(l)
	for _, v := range []string{"", v1, v2, v3} {
		if !slices.Contains(own, v) {
			t.Errorf("Own = %q, want it to hold %q", own, v)
		}
	}
	for _, v := range r.Accepted(l) {
		if !slices.Contains(own, v) {
			t.Errorf("Own = %q, want every accepted value, %q among them", own, v)
		}
	}
	if len(own) != 4 {
		t.Errorf("Own = %q, want the claim's none and the three values written or sent", own)
	}
	if slices.Contains(own, lease.NewNonce()) {
		t.Error("Own holds a value nobody wrote")
	}
	r.Forget(l)
	if got := r.Own(l); len(got) != 1 || got[0] != v2 {
		t.Errorf("after Forget, Own = %q, want only the lease's own value %q", got, v2)
	}
}
