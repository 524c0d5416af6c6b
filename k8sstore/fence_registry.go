package k8sstore

import (
	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// The claim's compare of the holder's schedule with the fleet schedule
// record, and of the record with the schedule the region registry's copy
// records: holders of two regions under different schedules could mint
// the same IDs. Both records are objects of their own, which the claim's
// JSON patch cannot test, so the claim reads them before its write
// (claimSchedule, claimcheck.go) and again after it (confirmClaim), and
// gives back a claim made while they came to differ, before anything is
// issued on it — as dynamostore does, whose conditional writes also see
// one item only. A lease is thus handed out only if the compares held
// after it was claimed, as if they were part of the write; a record
// changed later is one changed after the claim, as on any store.

// checkClaimRegistry returns lease.ErrSchedule if reg, the registry's copy
// as the claim read it, records a fleet schedule other than fs, the record.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func checkClaimRegistry(reg registry.Registry, fs lease.FleetSchedule) error {
	if revert.Registry {
		return nil
	}
	return lease.CheckRecordedSchedule(reg, fs)
}
