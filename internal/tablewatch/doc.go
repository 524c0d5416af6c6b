// Package tablewatch is what a lease-table store (pgstore, dynamostore)
// remembers between requests to notice that its table went back in time
// where the server shows no sign of it: a PostgreSQL restored from a
// file-level copy of its own data directory (same system identifier, same
// timeline), a dynalite or DynamoDB Local restarted on a copy of its data
// (same TableId), rows written back or deleted by hand. Marks the table
// acknowledged are then gone, and a claimer trusting the restored rows
// could start below IDs a holder already issued.
//
// # Signs
//
// A Watch keeps, for every number a Store value read or wrote, the row as
// last seen (row.go) and compares every later read with what it knew
// before that read was sent (a Span): a request sent after a response was
// received sees that state or a later one, unless the data went back. The
// signs (WentBack) are each possible only after a rollback or a row
// written by hand:
//
//   - a row gone, or an epoch lower than one seen: no write deletes a row
//     or lowers an epoch (a claim, a quarantine, raise-marks each add one);
//   - the epoch seen, under another claim nonce: each claim writes a new
//     nonce with a new epoch;
//   - under the same claim, a mark lower than one seen while held (only a
//     renewal writes a held row's mark, upward) or while free (only
//     raise-marks writes a free row's mark, upward), or a released claim
//     held again.
//
// One more sign is the stores' own, not the rows': a renewal value the
// holder wrote before its last acknowledged one, back in its row
// (lease.Renewals.Check says lease.ErrRestored; a clone draws values of its
// own). The store reports it with NoticeAfter, with the same consequences.
//
// Not signs, because ordinary operation produces them: a higher epoch (an
// expiry and another holder's claim, a quarantine, raise-marks — or a
// rollback followed by as many claims: ambiguous, and taken for a loss);
// a held row found free with a lower mark under the same claim (a release,
// maybe one whose reply was lost); a quarantined row free again (an
// unquarantine gives back the mark kept).
//
// # What a noticed restore does
//
// The Watch is shared by the Store values Keyspace opened from one
// another. Noticing starts a new generation (Notice): every lease claimed
// before is fenced (Restored: the store refuses its Extend with
// lease.ErrRestored), the rows seen are forgotten (they belong to the old
// history; comparing the new one with them would notice the same restore
// again and fence the leases claimed since), and the next claim sets the
// restore floor (Floor): that claimer's clock plus the store's restore
// window, below which no claim through the Watch starts again. The store
// also writes that floor into the table (PostgreSQL: <table>_origin;
// DynamoDB: the identity item), so that a process that never saw a sign
// starts its claims above it too.
package tablewatch
