package lease

import (
	"context"
	"errors"
	"fmt"
)

// A HolderCounter is a Store that can count its live holders more cheaply
// than by listing its records: etcd's owner keys vanish with their etcd
// lease, so one count-only read of them is the answer, where List would
// look up each holder's etcd lease.
type HolderCounter interface {
	// CountHolders returns how many numbers of the store's keyspace and
	// region are held by a lease live at nowMs (Unix ms): LiveHolders of
	// what List would return.
	CountHolders(ctx context.Context, nowMs int64) (int, error)
}

// LiveHolders counts the records of recs held by a lease live at nowMs:
// held, not quarantined, and not expired where the store keeps an expiry
// (a table store's record outlives its lease until the number is claimed
// again). A quarantined number is no holder's: a table store's quarantine
// row names the quarantine itself, and a holder whose number was
// quarantined can no longer renew and stops at its mark.
func LiveHolders(recs []Record, nowMs int64) int {
	n := 0
	for _, r := range recs {
		if r.LiveAt(nowMs) {
			n++
		}
	}
	return n
}

// LiveAt reports whether the record is held by a lease live at nowMs
// (LiveHolders counts them).
func (r Record) LiveAt(nowMs int64) bool {
	return r.Held() && !r.Quarantined && (r.ExpiresMs == 0 || r.ExpiresMs > nowMs)
}

// CountHolders counts the live holders at nowMs of st's keyspace and
// region: the fleet that shares a caller's quota (package perimeter). It
// uses st's HolderCounter if it has one, else Admin.List; a store with
// neither fails with errors.ErrUnsupported.
func CountHolders(ctx context.Context, st Store, nowMs int64) (int, error) {
	switch s := st.(type) {
	case HolderCounter:
		return s.CountHolders(ctx, nowMs)
	case Admin:
		recs, err := s.List(ctx)
		if err != nil {
			return 0, err
		}
		return LiveHolders(recs, nowMs), nil
	}
	return 0, fmt.Errorf("lease: %T can neither count nor list its holders: %w", st, errors.ErrUnsupported)
}
