// Package k8sstore keeps machine-number leases in Kubernetes: a
// lease.Store with the semantics of the lease tables (pgstore,
// dynamostore) and of zkstore, on coordination.k8s.io/v1 Lease objects in
// one namespace instead of rows or znodes.
//
// # Layout
//
// Everything lives in Config.Namespace, under names that begin with
// Config.Prefix (default "snowfence"):
//
//	<prefix>-origin          annotation snowfence.io/origin: {"id": random, "floor_ms": restore floor}
//	<prefix>-schedule        annotation snowfence.io/schedule: the fleet schedule record
//	                         {"schedule": canonical text, "version": N, "write": nonce}; absent: v1, version 0
//	<prefix>-registry        annotation snowfence.io/registry: the prefix's copy of the region
//	                         registry (registry.Encode's JSON); absent: none written
//	<prefix>-r<region>-<n>   one Lease per machine number n of keyspace region,
//	                         annotation snowfence.io/record: the lease record (JSON),
//	                         annotation snowfence.io/journal: the number's journal (below),
//	                         labels snowfence.io/prefix=<prefix>, snowfence.io/region=<region>
//
// The origin, schedule and registry objects carry the prefix label only,
// so no keyspace's list of lease objects sees them; every keyspace of the
// prefix shares them.
//
// A lease object's record (record.go) holds holder ("" when free), epoch
// (the fencing token, +1 per claim), mark_ms (the mark, which is also the
// expiry), claim (the claim attempt's nonce), renewal (the renewal value
// of the holder's last extension, lease.Renewals), floor_ms (the mark
// before the current claim: a release never records a lower one) and
// release (the nonce of the release that freed it). Lease objects are
// created by a number's first claim (or the operator's quarantine or raise
// of its mark) and never deleted. Their spec
// (holderIdentity, acquireTime, renewTime, leaseDurationSeconds,
// leaseTransitions = epoch) is filled in so that `kubectl get leases`
// reads well; nothing in the store reads it back, and nothing but the
// record decides.
//
// # Rules
//
// Every write is conditional. A claim of a number without an object is a
// Create, which fails with AlreadyExists if another claimer made it first.
// Every other write is ONE JSON patch (RFC 6902) whose first operations
// test the resourceVersion read and the exact record annotation read, and
// whose others replace the record and the spec, and the journal when the
// write changes it (fence_k8srecord.go, journal.go).
// kube-apiserver applies the patch to the object as stored, inside an
// update its storage makes conditional on the object's etcd revision, so
// a failed test refuses the whole write (422 Invalid). The resourceVersion
// alone is not enough: after etcd is restored under the API server its
// revisions count again from the copy's, and a write planned before the
// restore (a process frozen between its read and its write, a request held
// in a retrying client) could match a resourceVersion it never read, on
// another holder's live lease. The record string cannot repeat: it carries
// the claim's random nonce and every extension's random renewal value. So
// a write commits only on the record it was planned on, in any history.
// The store decides its writes in Go on what it read; every read is a
// quorum read (no resourceVersion given), which sees every write
// acknowledged before it was sent.
//
//   - Claim lists the keyspace's objects and takes a number whose object is
//     absent, whose mark is below the claimer's clock (expired), or which
//     is free with a mark at most MaxAhead ahead; the new epoch is one
//     more than the old, and the lease starts at or above the old mark and the claimer's
//     clock. Each claim attempt writes a fresh nonce (lease.NewNonce);
//     after an error of unknown outcome (a timeout, the connection lost
//     mid-request) the store re-reads the object and adopts the claim only
//     if it carries that attempt's nonce and holder.
//   - Extend raises mark_ms (never lowers it) and writes a fresh renewal
//     value, comparing holder, epoch, claim nonce and the renewal value
//     (one this Store value wrote or sent for the claim): lease.ErrLost
//     when another holds the number or a second process renews the same
//     claim, lease.ErrRestored when the object shows the data went back.
//   - Release writes the record free, with the end of what the holder
//     issued as the mark (never below floor_ms), on the same compares.
//
// Lease expiry is judged by the claimer's clock against the record's
// mark, as in the lease tables (leasetest's ClockExpiry): no Kubernetes
// field decides anything. leaseDurationSeconds and renewTime are what
// client-go's leader election reads, on the clocks of its own
// processes; the store writes them for people, never reads them.
//
// # Timings
//
// Because expiry is the claimer's clock against a mark, the store's
// timings are the lease tables' (Timings: lease.TableTimings — a 5-minute
// lease renewed every 5 s, a 4 min 10 s self-fence), not etcd's, whose
// short leases rest on the server expiring them by its own clock: here no
// server expires anything — the API server keeps a Lease object until
// someone deletes it — and a short lease would only make every holder cut
// off for a few seconds (an API server restarted, a slow etcd) lose its
// number. MaxRestoreWindow (6 min) and MaxNoticeWindow (4 min 40 s) are
// the tables' too, for the same reasons: they bound the restore and
// notice windows of holders on the table timings.
//
// # What a restore looks like
//
// An etcd restored under the API server from a snapshot or a copy of its
// data directory (without etcdutl's --bump-revision) carries nothing that
// says so: the same objects, the same UIDs, resourceVersions that may
// repeat ones issued after the copy. What a restore can show is only what
// a Store value saw before it (signs.go, fence_restore.go):
//
//   - the records (package tablewatch, shared with pgstore, dynamostore and
//     zkstore): an epoch lower than one seen, an object gone, the epoch
//     seen under another claim nonce, a mark lower than one seen under the
//     same claim, a released claim held again, or a renewal value the
//     holder wrote before its last one;
//   - the objects' metadata: under the same UID, a resourceVersion lower
//     than one seen (parsed as a number; one that is not is no sign), or
//     an object made anew under another UID;
//   - the origin object holding another id than the one first seen (the
//     prefix's objects deleted and made again, another cluster's data).
//
// Any of these fails the call that saw it with lease.ErrRestored, fences
// every lease the Store value (and its Keyspace siblings) claimed before
// (their Extend gets lease.ErrRestored), and makes the next claim set a
// restore floor — its clock plus the restore window — that it writes into
// the origin object, so every process's claims start at or above it. A
// claim reads the origin again once its own write committed, and fails if
// it changed meanwhile (Kubernetes writes one object at a time; zkstore
// checks the origin inside the claim's multi-op).
//
// What a restore cannot show: a process that never saw the later state
// takes the restored records as they are. Its claims are kept apart from
// holders cut off by the restore by the keeper's notice window (every
// claim's first grant waits MaxNoticeWindow, by which time a holder that
// can no longer renew has stopped), and its writes from theirs by the
// record test above.
//
// # Permissions
//
// The store needs get, list, create and patch on leases.coordination.k8s.io
// in its namespace — no update, no delete, no watch, nothing
// cluster-scoped:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: Role
//	metadata: {name: snowfence, namespace: NS}
//	rules:
//	- apiGroups: [coordination.k8s.io]
//	  resources: [leases]
//	  verbs: [get, list, create, patch]
//
// bound to the fleet's service account by a RoleBinding. The operator's
// actions (lease.Admin, the registry's copy) need nothing more either:
// they read, list, create and patch leases as the holders do. Anyone who may
// patch leases in the namespace may rewrite a mark: give the namespace to
// the fleet alone. A refusal by authorization is ErrForbidden.
//
// # The operator's actions
//
// Store implements lease.Admin (AdminKeyspace is Keyspace as an Admin) and
// registry.Store, and its RegistryReader is the Store itself. Every
// operator's write is one tested JSON patch (or a Create), as a holder's:
//
//   - Quarantine writes holder lease.QuarantineHolder, one more epoch, the
//     mark kept and a NEW claim nonce; Unquarantine removes the holder and
//     keeps the rest. RaiseMarks, per number, fences the holder (holder
//     removed, one more epoch) or raises a free or quarantined mark, with a
//     new claim nonce in every write, and makes an object holding the mark
//     for a number without one. A write planned before them on the old
//     record — a late renewal or release, in this history or one an etcd
//     restore brought back — fails its record test, for no write can have
//     planned on a string carrying a nonce made after it.
//   - List is one list of the keyspace's objects, judged as Get judges an
//     object (signs.go).
//
// # The journal
//
// A number's journal (lease.Journal) is its lease object's annotation
// snowfence.io/journal: a JSON array of its newest lease.JournalRetention
// (64) entries, oldest first. A claim writes its entry in the same JSON
// patch (or Create) as its record; Release, Quarantine and RaiseMarks end
// the newest entry in theirs, when it is the holding they end — atomic,
// as zkstore's multi-op, with no object of its own to keep in step. An
// entry is about 260 bytes with a 45-character holder: 64 are about 17 KB,
// and the annotation is bounded at 64 KiB whatever the holder names (the
// oldest entries beyond it are dropped, the newest always kept), far below
// the API server's 256 KiB limit on an object's annotations. Renewals leave
// it as it is, but read it with the object (journal.go).
//
// # The fleet schedule and the registry: compared, not tested
//
// A JSON patch tests one object, as DynamoDB conditions a write on one
// item only, so a claim's or a renewal's write cannot test the fleet
// schedule record or the registry's copy, which are other objects. The
// store does what dynamostore does, for the same reasons:
//
//   - A claim reads both (quorum reads) and refuses with lease.ErrSchedule
//     a holder schedule other than the record's, or a record other than
//     the one the registry records (lease.CheckRecordedSchedule); after its
//     write commits it reads both again and gives back (Release) a claim
//     made while they came to differ, before anything is issued on it
//     (claimcheck.go). A lease is thus handed out only if the compares
//     held after it was claimed, as if they were part of the write.
//   - A renewal reads the record before its write and refuses to reserve
//     past the first instant the fleet's schedule differs from its own
//     (lease.CheckExtension). That a read before the write is enough rests
//     on the notice rule: lease.SetSchedule accepts only a change whose
//     first difference is at least lease.MinScheduleNotice (1 h) past
//     every clock and mark, longer than any mark a holder reserves
//     (lease.MaxReserve, 30 min), so a mark written after a read that
//     missed the change still ends before that instant, and the next
//     renewal's read sees the change (fence_schedule.go).
//   - The store does not implement lease.UnusedScheduleSetter: no write of
//     the schedule can check that no lease object exists in any keyspace,
//     so lease.SetSchedule keeps the notice rule on it even for a store
//     that holds no lease yet.
//
// This costs a claim four reads more (two before its write, two after),
// beside the Get of each candidate its write is planned on (claim.go:
// reread4claim), and a renewal one (the schedule record) beside its read
// and its patch.
//
// # Concurrency
//
// A Store is safe for concurrent use; so are the Store values Keyspace
// opens from it, which share what they remember of the objects.
package k8sstore
