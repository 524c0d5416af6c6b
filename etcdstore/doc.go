// Package etcdstore keeps snowfence's machine-number leases in etcd: the
// default store, both for a fleet on a 3- or 5-member etcd cluster and for
// the holders of one host on an embedded etcd (package embedetcd runs that
// server; etcdstore needs only the client). It is the only package of
// snowfence that uses the etcd client (embedetcd merely opens one for it).
//
// # Keys
//
// Per region and machine number n (docs/etcd-keys.md has the values):
//
//	<prefix>/<region>/owner/<n>       bound to the holder's etcd lease; its create revision is the fencing token
//	<prefix>/<region>/mark/<n>        plain key, outlives leases: the high-water mark (Unix ms, exclusive)
//	<prefix>/<region>/quarantine/<n>  plain key; present means unclaimable and unrenewable
//	<prefix>/schedule                 plain key, shared by every region: the fleet schedule
//
// and the lease journal (History), outside <prefix>/<region>/ so that the
// claims' reads of the region never see it, per claim c (its etcd lease ID
// in hex, lease.Lease.Claim) of number n:
//
//	<prefix>/journal/<region>/<n>/<c>      plain key, written by the claim's transaction; its create revision is the token
//	<prefix>/journal/<region>/<n>/<c>/end  plain key, written by the release, quarantine or raise that ended the holding
//
// The claim that adds a number's 65th entry drops the oldest in the same
// transaction (lease.JournalRetention). Renewals write nothing to it.
//
// # Fencing
//
// A claim is a transaction that puts the owner key only if neither it nor
// the quarantine key exists, the fleet schedule is the one the claimer
// brought and the mark is the one it read just before (so the journal
// entry the same transaction writes names the mark it took over); the
// token is the owner key's create revision, new on every claim. Every extension of the mark is
// a transaction compared on that token and on the owner key's etcd lease
// (a create revision can repeat after etcd's revision fell), and on the
// fleet schedule, so a holder whose key expired, was revoked or was taken,
// or whose schedule is no longer the fleet's, cannot extend, however its
// keep-alives fared. Keep-alives are for liveness only. Marks are never
// lowered by Extend, and Release never records less than a mark someone
// else wrote.
//
// Each extension writes a fresh random renewal value into the mark key
// (lease.Renewals). A mark written under the lease's own token with a
// value this Store value neither wrote nor sent is another copy of the
// holder process renewing the same claim (a clone: same token, same etcd
// lease): Extend and Release refuse with lease.ErrLost rather than extend
// from it or lower it.
//
// # Errors of unknown outcome
//
// A transaction that returned an error may have committed. A claim decides
// from the store: it adopts an owner key bound to its own etcd lease, and
// otherwise revokes that lease. Extend and Release return the error; the
// caller re-reads with Get, and the store's next compare picks up whatever
// the write left behind — its renewal value among them, remembered as
// sent.
//
// # Restores
//
// Every read is linearizable. The store remembers the highest revision and
// raft term and the cluster ID etcd reported, and for each of its leases
// the owner key's etcd lease and the mark key's mod revision and value as
// it last wrote or read them. A response with a lower revision or raft term
// than one seen before its request was sent, another cluster ID, a mark key
// it wrote gone or at a lower mod revision (marks are never deleted), a
// mark written by another claim below its own, or the owner key with its
// token bound to another etcd lease, means etcd went back in time (a
// restore from an earlier state, or a replacement). Every lease claimed
// before is then fenced — Extend and Release return lease.ErrRestored,
// and the first of them writes back the mark the store knew for that
// number if the restored one is lower — and later claims start at least the restore window (the claimer's
// ClaimRequest.RestoreWindow, or Config.RestoreMargin) after the moment it
// was noticed, on the claimer's clock. A missing owner key alone is no
// sign: an expired etcd lease leaves the same. A process that wrote nothing
// since the backup, or starts after the restore, cannot notice a restore
// under the old cluster token with the revision bumped; the operator runs
// RaiseMarks first (docs/runbook.md), which fences every holder and raises
// every mark.
//
// # Ownership and concurrency
//
// A Store made by New uses a client the caller owns and closes; one made by
// Connect owns its client and closes it in Close. Every method of Store is
// safe for concurrent use.
//
// # Interfaces
//
// Store implements lease.Store, the fence contract a Keeper holds numbers
// through (its RegistryReader is the Store itself); lease.Admin, the
// operator's actions the snowfence CLI and the status page use (AdminKeyspace
// is Keyspace as an Admin); and registry.Store, its copy of the region
// registry. TestConformance runs the three suites: leasetest.Run,
// leasetest.RunAdmin and registrytest.Run.
package etcdstore
