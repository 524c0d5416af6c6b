// Package pgstore is a lease.Store on a PostgreSQL table: the lease table
// of docs/design.md — one row per machine number whose expiry is both the
// lease and the high-water mark, an epoch as fencing token, a claim only
// when the expiry is below the claimer's clock — with conditional writes
// in place of DynamoDB's condition expressions.
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
//	claim_nonce         128 random bits written by the claim attempt that
//	                    made the row's current claim; after an error of
//	                    unknown outcome a claimer adopts the row only if it
//	                    carries its own attempt's nonce (holder names can be
//	                    shared). RaiseMarks and a noticed restore write why
//	                    they fenced the holder here instead.
//	claim_seq           the claim number of the row's current claim: its
//	                    journal entry's seq (see The journal)
//	renewal             128 random bits written by each extension ('' after
//	                    a claim); extensions and releases compare it with
//	                    the values their Store value wrote or sent, so a
//	                    cloned holder process renewing the same claim is
//	                    refused (lease.Renewals)
//	updated_at          when the row last changed (for operators)
//
// Beside it, for every region of the table:
//
//	<table>_fleet       one row (id 1): the fleet's layout schedule and its
//	                    version; no row means "v1" at version 0. Claims and
//	                    extensions compare the holder's schedule with it in
//	                    the same statement and refuse with lease.ErrSchedule.
//	<table>_origin      one row (id 1): the server's system identifier and
//	                    WAL timeline as first seen, the restores noticed and
//	                    the restore floor (see Restores).
//	<table>_region    one row (id 1): this store's copy of the region
//	                    registry, version and body (JSON of registry.Registry);
//	                    no row means none was written (version 0). Written
//	                    with INSERT … ON CONFLICT DO NOTHING for version 1
//	                    and UPDATE … WHERE version = next − 1 after. A claim
//	                    reads it and the <table>_fleet row FOR SHARE in its
//	                    statement and refuses, with lease.ErrSchedule, while
//	                    the schedule it records ("schedule" in the body)
//	                    differs from the fleet's: the rows cannot change
//	                    until the claim commits (the claiming role needs
//	                    UPDATE on both tables for the lock).
//	<table>_claims      the lease journal: the newest 64 claims of each
//	                    (region, machine number) (see The journal).
//
// Migrate creates them, and adds claim_nonce, claim_seq and renewal to a
// table made by an earlier version: run it ("snowfence leases init") after
// upgrading.
// Every operation is one conditional statement (RaiseMarks: one
// transaction of two); there are no advisory locks and no
// read-then-write sequences whose outcome a race could change (reads only
// choose candidates and explain refusals):
//
//	claim     INSERT … ON CONFLICT DO UPDATE SET holder, lease_expiry = now + LeaseFor,
//	          lease_epoch + 1 WHERE holder <> 'QUARANTINED' AND (lease_expiry < now
//	          OR (holder = '' AND lease_expiry ≤ now + MaxAhead)) RETURNING …
//	extend    UPDATE … SET lease_expiry = GREATEST(lease_expiry, mark), renewal = new
//	          WHERE holder = me AND lease_epoch = my epoch AND claim_nonce = mine
//	          AND lease_expiry >= the mark last seen under my claim (signs.go)
//	          AND renewal = ANY(mine)
//	release   UPDATE … SET holder = '', lease_expiry = max(mark, floor_ms)
//	          WHERE holder = me AND lease_epoch = my epoch AND claim_nonce = mine
//	          AND renewal = ANY(mine)
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
// length. Table timings: lease 5 min, renew every 5 s, self-fence 4 min
// 10 s, margin 5 s (Timings).
//
// # Restores
//
// A PostgreSQL that fails over to an asynchronous standby, runs with
// synchronous_commit = off and crashes, or is recovered from a backup has
// gone back in time: marks it acknowledged may be gone, and a claimer
// could start below timestamps a holder already issued. The store detects
// what the server can tell: every claim and extension statement reads the
// server's system identifier (pg_control_system) and the timeline of its
// current WAL file (pg_walfile_name(pg_current_wal_lsn()): a promotion or
// point-in-time recovery changes it at once) and runs only if they equal
// the origin row. They are read inside the statement that claims or
// extends, never cached per store or per connection: a failover swaps the
// server under the pool, and only the statement's own reading is about the
// server that executed it. When they differ, Extend fails with
// lease.ErrRestored, and the next claim, by any process, records the
// change in one statement: every held row of every region loses its holder
// (epoch + 1; their next Extend says lease.ErrRestored), and every later
// claim starts at or after the noticing claimer's clock plus the
// restore window (ClaimRequest.RestoreWindow, or Config.RestoreWindow:
// DefaultRestoreWindow, 6 min), so that holders cut off by the change have
// stopped issuing. A planned switchover changes the timeline too and costs
// the same pause.
//
// A restore the server's identity does not show — a file-level copy of the
// data directory put back on the same cluster and timeline, a table restored
// with pg_restore into the same cluster, rows written back — shows in the
// rows (signs.go): a Store value that saw a row at a later state (an epoch,
// a claim under that epoch, a mark under that claim, the row itself) takes
// an earlier one for a restore, with the same consequences, the floor
// written into the origin row by its first claim after.
//
// Not detectable: such a restore before any Store value that saw the later
// rows reads them again (a process started after it, a holder that held
// nothing, trusts the restored marks until a holder that noticed has
// claimed and written the floor), a number whose epoch climbed back past
// the one seen (taken for an ordinary loss), and anything a second live
// primary accepts (split brain). The store therefore needs durable
// acknowledgements: Connect runs its sessions with synchronous_commit = on
// (a pool given to New must not turn it off), and a failover must go to a
// synchronous standby (synchronous_standby_names, synchronous_commit on or
// remote_apply); otherwise, after a failover or restore keep holders away,
// run "snowfence leases raise-marks" past the last ID issued for every
// region, and only then let them back (docs/runbook.md).
//
// # Quarantine
//
// # The journal
//
// <table>_claims keeps, per (region, machine_id), one row per claim, in
// 64 slots (lease.JournalRetention):
//
//	region, machine_id, slot   the key; slot = seq mod 64
//	seq                        the claim number: the row's claim_seq
//	lease_epoch, claim_nonce   the claim's token and claim identity
//	holder, claimed_ms         the claimer and its clock at the claim
//	prev_mark_ms               the mark the claim read (the row's new floor_ms)
//	start_ms                   the lease's StartMs, max(claimed_ms, prev_mark_ms)
//	end_kind, end_ms           '' or released / quarantined / raised, and the
//	                           mark at that end (release: written; quarantine:
//	                           kept; raise: replaced)
//	ended_ms, claimed_at       the server's clock at the end and at the claim
//	                           (for people)
//
// The claim statement writes the entry itself (a data-modifying CTE over
// the claim's RETURNING): a claim that took effect has its entry, one that
// did not has none, and a claim adopted after an error of unknown outcome
// finds it. seq is the row's claim_seq + 1, or one past the journal's
// newest seq of the number if that is higher; the entry replaces the one
// in its slot, 64 claims older, so the journal never holds more and no
// sweeper runs. claim_seq is read and written under the row's lock, so
// claims of one number never share a seq whatever the statement's
// snapshot saw, and claims of different numbers touch different rows.
// The statements of Release, Quarantine, Unquarantine and RaiseMarks end
// the entry of the claim the row carries (found by claim_seq and
// claim_nonce, never by epoch alone: epochs repeat when the table goes
// back in time) if no write ended it yet. Renewals write nothing to it.
// A noticed restore's fence ends nothing: those holders show as lost, up
// to the next claim's mark, which is above the restore floor.
//
// A claim of unknown outcome that committed but was overtaken before its
// claimer re-read the row (another claim over its expiry, a raise, a
// quarantine) is given back: its entry is ended, released at its own
// start, an empty interval. One that commits after the claimer gave up
// (a statement delayed in the network) keeps its entry: its interval
// covers its lease, which nobody used, and overlaps nothing.
//
// The journal is restored with the table: the two are in one database,
// and a restore of it (a backup, a point-in-time recovery) brings both
// back to one moment; the claims after it are gone from both. A lease
// table restored without its journal (pg_restore -t) keeps the newer
// entries, and claims go on numbering after them. A journal restored
// without the table, or older than it, is not supported: its slots would
// be overwritten out of order. Hand-made rows and changes: a row deleted
// and made again continues its numbering from the journal; a quarantine
// by hand (below) leaves the holder's entry open — it reads as lost, up
// to the mark the UPDATE kept, which is the holder's last — until
// Unquarantine or a raise of the marks ends it as quarantined at that
// mark; a claim or release made by hand writes no entry, and the entry
// before it then also covers what such a holder issued.
//
// # Quarantine
//
// Quarantine writes what the operator's quarantine of a row writes — holder
// 'QUARANTINED' (lease.QuarantineHolder), lease_expiry 2100-01-01
// (4102444800000, lease.QuarantineExpiryMs), epoch + 1 — and
// keeps the old lease_expiry in floor_ms, so Unquarantine can give the row
// back with a mark no lower than what the holder before could have issued.
// By hand, in psql:
//
//	UPDATE idgen_leases SET holder = 'QUARANTINED', floor_ms = GREATEST(floor_ms, lease_expiry),
//	       lease_expiry = 4102444800000, lease_epoch = lease_epoch + 1
//	 WHERE region = 0 AND machine_id = 170 AND holder <> 'QUARANTINED';
//
// The region column is the keyspace (lease.KeyspaceOf: the region, or
// step × 65536 + region for a later layout step), so region 0 above is
// right for region 0's first layout only: take the condition from
// snowfence leases key N --region NAME (Store.RawKey), never from the
// number alone.
//
// # Interfaces
//
// Store implements lease.Store, the fence contract a Keeper holds numbers
// through (its RegistryReader is the Store itself); lease.Admin, the
// operator's actions the snowfence CLI and the status page use (AdminKeyspace
// is Keyspace as an Admin); and registry.Store, its copy of the region
// registry. TestConformance runs the three suites: leasetest.Run,
// leasetest.RunAdmin and registrytest.Run.
package pgstore
