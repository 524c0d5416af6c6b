// Package pgstore is a lease.Store on a PostgreSQL table: the lease table
// of seed 002 (DESIGN.md §3), with conditional writes in place of
// DynamoDB's condition expressions.
//
// # The table
//
// One row per (region, machine number):
//
//	region, machine_id  the key
//	holder              who holds it; '' when free, 'QUARANTINED' when quarantined
//	lease_expiry        Unix ms; the lease's expiry and the high-water mark
//	lease_epoch         the fencing token: +1 on every claim and quarantine
//	floor_ms            the highest mark anyone but the current holder wrote
//	                    (the previous holder, RaiseMarks, the holder before a
//	                    quarantine); Release never records less
//	updated_at          when the row last changed (for operators)
//
// Migrate creates it. Every operation is one conditional statement; there
// are no advisory locks and no read-then-write sequences whose outcome a
// race could change (reads only choose candidates and explain refusals):
//
//	claim     INSERT … ON CONFLICT DO UPDATE SET holder, lease_expiry = now + LeaseFor,
//	          lease_epoch + 1 WHERE holder <> 'QUARANTINED' AND (lease_expiry < now
//	          OR (holder = '' AND lease_expiry ≤ now + MaxAhead)) RETURNING …
//	extend    UPDATE … SET lease_expiry = mark WHERE holder = me AND lease_epoch = my
//	          epoch AND lease_expiry < mark
//	release   UPDATE … SET holder = '', lease_expiry = max(mark, floor_ms)
//	          WHERE holder = me AND lease_epoch = my epoch
//
// # Guarantees
//
// The token is the epoch. The mark is lease_expiry: a holder issues only
// below it, so a claimer whose clock is past it (the claim's condition)
// starts above everything the old holder could have issued, whatever the
// two clocks say. Expiry is judged by the claimer's clock (ClaimRequest.NowMs),
// never the server's. A released row may be claimed at once; the claim
// then starts at its recorded mark (within MaxAhead).
//
// Extend ignores its leaseFor argument: a table's lease lasts exactly as
// far as its mark, so the Keeper's Reserve (default LeaseFor) is the lease
// length. Table timings (seed 002): lease 5 min, renew every 10 s, margin
// 5 s.
//
// # Quarantine
//
// Quarantine writes what seed 002's runbook command 3 writes — holder
// 'QUARANTINED', lease_expiry 2100-01-01 (4102444800000), epoch + 1 — and
// keeps the old lease_expiry in floor_ms, so Unquarantine can give the row
// back with a mark no lower than what the holder before could have issued.
// By hand, in psql:
//
//	UPDATE idgen_leases SET holder = 'QUARANTINED', floor_ms = GREATEST(floor_ms, lease_expiry),
//	       lease_expiry = 4102444800000, lease_epoch = lease_epoch + 1
//	 WHERE region = 0 AND machine_id = 170 AND holder <> 'QUARANTINED';
package pgstore
