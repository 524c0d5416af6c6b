// Package zkstore keeps machine-number leases in Apache ZooKeeper: a
// lease.Store and lease.Admin with the semantics of the lease tables
// (pgstore, dynamostore), on znodes instead of rows, with the fleet
// schedule record, the journal and a copy of the region registry beside
// them (registry.Store).
//
// # Layout
//
// Everything lives under Config.Path (default /snowfence):
//
//	<path>/origin                  {"id": random, "floor_ms": restore floor}
//	<path>/leases/<region>/<n>     one lease record per machine number n
//	<path>/leases/<region>/<n>/c-<claim nonce>   the current claim's child (empty)
//	<path>/schedule                {"schedule", "version", "write": nonce}: the fleet schedule record
//	<path>/registry                registry.Encode's JSON: the copy of the region registry
//	<path>/used                    empty: some lease record exists (SetFleetScheduleUnused)
//	<path>/journal/<region>/<n>/<seq>   one journal entry per claim of n (journal.go)
//
// A lease znode holds a small JSON record (record.go): holder ("" when
// free), epoch (the fencing token, +1 per claim), mark_ms (the mark, which
// is also the expiry), claim (the claim attempt's nonce), renewal (the
// renewal value of the holder's last extension, lease.Renewals), floor_ms
// (the mark before the current claim: a release never records a lower
// one) and release (the nonce of the release that freed it). Lease znodes
// are created by a number's first claim (or an operator's quarantine or
// raise of its mark) and never deleted. A quarantined number's record
// holds lease.QuarantineHolder, one more epoch and a claim nonce of the
// quarantine's own, and keeps as mark_ms the mark it had (the holder's),
// which Unquarantine gives back; lease.Record shows it with the lease
// tables' 2100 expiry.
//
// # Rules
//
// Every write is conditional: a claim of a number without a znode is a
// Create, which fails if another claimer made it first; every other write
// is a Set on the data version the store read, which fails if anything
// changed since. The version alone is not enough: a restore brings old
// versions back, and a write planned before it (a process frozen between
// its read and its write, a request left queued in a reconnecting
// session) could match a version it never read, on another holder's
// record. So every record carries its claim's child znode, <n>/c-<claim
// nonce> (fence_zkchild.go): a claim's Multi deletes the old claim's child
// and creates its own, and every write that keeps a claim (renewal,
// release) is a Multi that checks its claim's child still exists. A nonce
// is random and never repeats, so such a write commits only while its
// claim's record is the znode's, in any history. A claim's write is a Multi that also checks the origin
// znode's version, so it commits only on the origin id and restore floor
// it was planned on. The store decides its writes in Go on what it read, and
// every read that decides a write follows a Sync, since a ZooKeeper
// server answers reads from its own copy, which may lag the leader's.
// Uniqueness does not rest on the Sync (a sync followed by a read is not
// a quorum read, and ZooKeeper does not promise it linearizable through
// every leader change): a stale read can only make a write fail its
// version compare. The Sync keeps
// claims from trying numbers already taken, and keeps a record older than
// one this store saw from looking like a restore — which is why a sync and
// the reads after it always go through one session (session.go).
//
//   - Claim takes a number whose znode is absent, whose mark is below the
//     claimer's clock (expired), or which is free with a mark at most
//     MaxAhead ahead; the new epoch is the old + 1, and the lease starts
//     at or above the old mark and the claimer's clock. Each claim attempt
//     writes a fresh nonce (lease.NewNonce); after an error of unknown
//     outcome (the connection lost mid-write) the store re-reads the znode
//     and adopts the claim only if it carries that attempt's nonce and
//     holder.
//   - Extend writes the mark first: it raises mark_ms (never lowers it)
//     and writes a fresh renewal value, and the keeper issues only below
//     the mark the store acknowledged. It compares holder, epoch, claim
//     nonce and the renewal value (one this Store value wrote or sent for
//     the claim): lease.ErrLost when another holds the number or a second
//     process renews the same claim, lease.ErrRestored when the record
//     shows the data went back.
//   - Release writes the record free, with the end of what the holder
//     issued as the mark (never below floor_ms), on the same compares
//     (a renewal value the holder wrote before its last is taken too).
//
// Lease expiry is judged by the claimer's clock against the record's
// mark, as in the lease tables (leasetest's ClockExpiry), not by
// ZooKeeper sessions: the store uses no ephemeral znode and no session
// state decides a lease. A session expires when its process is frozen or
// cut off for the session timeout — exactly when a holder may still be
// issuing below its mark — so an ephemeral znode's removal must never free
// a number. The session only carries requests; a lease lasts until its
// mark, whatever becomes of the session that wrote it.
//
// # Timings
//
// Because expiry is the claimer's clock against a mark, the store's
// timings are the lease tables' (Timings: lease.TableTimings — a 5-minute
// lease renewed every 5 s, a 4 min 10 s self-fence), not etcd's, whose
// short leases rest on the server expiring them by its own clock: here no
// server expires anything, and a short lease would only make every holder
// cut off for a few seconds (a leader election, a frozen follower) lose
// its number. MaxRestoreWindow (6 min) and MaxNoticeWindow (4 min 40 s)
// are the tables' too, for the same reasons: they bound the restore and
// notice windows of holders on the table timings.
//
// # What a restore looks like
//
// A ZooKeeper ensemble restored from a copy of its data directories
// carries nothing that says so: the same servers, the same origin znode,
// and zxids that may repeat ones issued after the copy (the epoch the
// servers agree on is in the copied files too). What a restore can show is
// only what a Store value saw before it:
//
//   - the records (package tablewatch, shared with pgstore and
//     dynamostore): an epoch lower than one seen, a znode gone, the epoch
//     seen under another claim nonce, a mark lower than one seen under the
//     same claim, a released claim held again, or a renewal value the
//     holder wrote before its last one;
//   - the znodes' stats: under the same creation zxid, a data version or
//     a modification zxid lower than one seen, or a znode created anew
//     (a renewal that moved no mark shows only there, to a Store value
//     other than the holder's); and the region's znode, listed by every
//     claim: a children's version or last child's zxid lower than one
//     seen (a number first claimed after the copy is gone, even outside
//     the range the claimer reads);
//   - the origin znode holding another id than the one first seen (the
//     path wiped and made again, another ensemble's data).
//
// Any of these fails the call that saw it with lease.ErrRestored, fences
// every lease the Store value (and its Keyspace siblings) claimed before
// (their Extend gets lease.ErrRestored), and makes the next claim set a
// restore floor — its clock plus the restore window — that it writes into
// the origin znode, so every process's claims start at or above it.
//
// What a restore cannot show: a process that never saw the later state
// (started after the restore, or one that read nothing of the numbers
// concerned) takes the restored records as they are. Its claims are kept
// apart from holders cut off by the restore by the keeper's notice window
// (every claim's first grant waits MaxNoticeWindow, by which time a holder
// that can no longer renew has stopped). The runbook's further step after
// a restore, raising every mark past the last ID issued
// (docs/runbook.md), is RaiseMarks: one conditional multi-op per number
// that raises its mark and fences its holder under a new claim nonce.
//
// A session that saw a zxid the restored ensemble has not reached is
// refused by every server (go-zookeeper offers the last zxid it saw, and
// a server behind it takes the client for one that should try a more
// up-to-date server) until other clients' writes move the servers' zxid
// past it — never, if every client is such a process. Meanwhile the store
// fails its requests and its holders self-fence. A Store that Connect
// opened replaces its session once it has had none for twice the session
// timeout (session.go); one on New's session depends on its caller to do
// the same.
//
// # The Go client
//
// The store uses github.com/go-zookeeper/zk, the maintained fork of
// samuel/go-zookeeper: pure Go (no cgo, no JVM), with the versioned Set,
// Create, Sync and Multi the rules above need. It takes no context; a
// request made while the session reconnects waits in its queue, so the
// store abandons it when the caller's context ends and treats its outcome
// as unknown (it may still be sent and commit, on the version it was made
// for).
//
// A server that is frozen (SIGSTOP, a long pause) still accepts TCP
// connections, and go-zookeeper waits ten times its receive timeout (2/3
// of the session timeout) for the handshake: a session that picks such a
// server stalls for about 6.7 session timeouts before it tries the next
// (TestKeepersRideOutLeaderFreeze: 27 s at a 4 s session timeout; 67 s at
// the default 10 s). Holders on the table timings (a 4 min 10 s
// self-fence) ride that out; holders with a self-fence shorter than that
// stall refuse to issue meanwhile, and keep their numbers.
//
// Every znode the store creates carries Config.ACL (open to all by
// default); where others can reach the servers, give the fleet a digest
// ACL and its credentials (Config.Auth; Config.WithDigest sets both, as
// "snowfence serve --zk-digest" does), or anyone could rewrite a mark.
//
// # The operator's records
//
// Beside the leases, and shared by every keyspace under the path, the
// store keeps the fleet schedule record (<path>/schedule, schedule.go), its
// copy of the region registry (<path>/registry, registry.go; its identity,
// RegistryIdentity, is the origin znode's random id and the path) and the
// used marker (meta.go). The schedule and registry znodes are created
// empty when first read (a multi-op can check the version of a znode that
// exists, not the absence of one), and every write of them is a Set on the
// data version read after a sync. RegistryReader returns the store.
//
// The schedule is fenced as in the lease tables, and more tightly: a claim
// reads the record and the registry after its sync, refuses with
// lease.ErrSchedule a schedule other than the record's, or a record other
// than the one the registry records, and its multi-op checks both znodes'
// versions, so a change of either between its read and its write fails
// it. An extension reads the record after its sync, refuses a mark past
// the first instant the record's schedule differs from the lease's
// (lease.CheckExtension), and its multi-op checks the record's version.
// SetFleetScheduleUnused (lease.UnusedScheduleSetter) changes the record
// at once only while no lease record exists under the path: every write
// that creates a lease znode creates <path>/used in its multi-op if it
// read it absent, and the schedule's multi-op creates and deletes it — so
// of such a write and the change, whichever commits second fails.
//
// The operator's writes follow the claim child's rules. Quarantine and
// every write of RaiseMarks give the record a new claim nonce (epoch + 1),
// replacing the old claim's child in their multi-op, so no renewal,
// release or operator's write planned on the claim before lands after
// them; Unquarantine keeps the quarantine's claim and checks its child. It
// is the only write that keeps an operator's claim, so no two records
// under one such nonce differ: a restore that brings a version back
// brings the content the write was planned on back too. Each is decided on
// a read after a sync, and after an error of unknown outcome by a re-read
// of its nonce.
//
// The journal (lease.Journal, journal.go) holds one znode per claim,
// <path>/journal/<region>/<n>/<seq>, created in the claim's own multi-op,
// which also deletes the entries that fall out of the newest
// lease.JournalRetention; Release, Quarantine and RaiseMarks end the
// holding's entry in theirs.
package zkstore
