package pgstore

import "github.com/snowfence/snowfence/lease"

// Timings returns the keeper timings that suit a lease table: a 5-minute
// lease renewed every 10 s, issuing stopped 30 s after the last
// acknowledged renewal, and a 5 s margin, so that nothing is issued at or
// past lease_expiry − 5 s.
//
// In a table the lease is the reservation: Extend writes the mark as the
// new expiry, and the keeper's Reserve defaults to LeaseFor. Renewing every
// 10 s costs one single-row UPDATE per holder every 10 s; the 30 s
// self-fence stops a holder cut off from the table long before its mark.
// A holder's restore window at these timings is 5 min 31 s
// (lease.RestoreWindow), within MaxRestoreWindow and DefaultRestoreWindow.
// The keeper's defaults are an etcd store's; apply these to a KeeperConfig
// for a PostgreSQL store with lease.Timings.Apply.
func Timings() lease.Timings {
	return lease.TableTimings()
}
