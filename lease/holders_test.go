package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// TestLiveHolders: a record counts while it is held, not quarantined, and
// its lease, where the store keeps an expiry, has not run out; a free
// number never does.
func TestLiveHolders(t *testing.T) {
	const now = 1_000_000
	recs := []lease.Record{
		{Machine: 1, Holder: "a"},                                        // etcd: no expiry kept, the key vanishes with its lease
		{Machine: 2, Holder: "b", ExpiresMs: now + 1},                    // live
		{Machine: 3, Holder: "c", ExpiresMs: now},                        // ran out at now
		{Machine: 4, Holder: "d", ExpiresMs: now - 5000},                 // a table's record of a holder long gone
		{Machine: 5, MarkMs: now},                                        // free
		{Machine: 6, Holder: "e", ExpiresMs: now + 9, Quarantined: true}, // stops at its mark, and a table's quarantine row names no holder
	}
	if got := lease.LiveHolders(recs, now); got != 2 {
		t.Errorf("LiveHolders = %d, want 2 (machines 1 and 2)", got)
	}
}

// TestCountHoldersUnsupported: a store that neither counts nor lists says
// so with errors.ErrUnsupported.
func TestCountHoldersUnsupported(t *testing.T) {
	if _, err := lease.CountHolders(context.Background(), plainStore{}, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CountHolders of a plain Store: %v, want errors.ErrUnsupported", err)
	}
}

// plainStore is a lease.Store with nothing more; CountHolders never calls
// it.
type plainStore struct{ lease.Store }
