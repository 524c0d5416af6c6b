// Package etcdstore keeps snowfence's machine-number leases in etcd: the
// default store, both for a fleet on a 3- or 5-member etcd cluster and for a
// single process on an embedded etcd (StartEmbedded). It is the only package
// of snowfence that imports the etcd client.
//
// # Keys
//
// Per region and machine number n (docs/etcd-keys.md has the values):
//
//	<prefix>/<region>/owner/<n>       bound to the holder's etcd lease; its create revision is the fencing token
//	<prefix>/<region>/mark/<n>        plain key, outlives leases: the high-water mark (Unix ms, exclusive)
//	<prefix>/<region>/quarantine/<n>  plain key; present means unclaimable and unrenewable
//
// # Fencing
//
// A claim is a transaction that puts the owner key only if neither it nor
// the quarantine key exists, and reads the mark in the same step; the
// token is the owner key's create revision, new on every claim. Every
// extension of the mark is a transaction compared on that token, so a
// holder whose key expired, was revoked or was taken cannot extend, however
// its keep-alives fared. Keep-alives are for liveness only. Marks are never
// lowered by Extend, and Release never records less than a mark someone
// else wrote.
//
// # Errors of unknown outcome
//
// A transaction that returned an error may have committed. A claim decides
// from the store: it adopts an owner key bound to its own etcd lease, and
// otherwise revokes that lease. Extend and Release return the error; the
// caller re-reads with Get, and the store's next compare picks up whatever
// the write left behind.
//
// # Restores
//
// Every read is linearizable. The store remembers the highest revision and
// the cluster ID etcd reported; a response that reports a lower revision
// than one seen before its request was sent, or another cluster ID, means
// etcd was restored from an earlier state (or replaced). Every lease
// claimed before is then fenced — Extend and Release return
// lease.ErrRestored — and later claims start at least Config.RestoreMargin
// after the moment it was noticed. A process that starts after the restore
// cannot notice it; the operator raises every mark first (RaiseMarks,
// docs/runbook.md).
//
// # Ownership and concurrency
//
// A Store made by New uses a client the caller owns and closes; one made by
// Connect owns its client and closes it in Close. Every method of Store is
// safe for concurrent use.
package etcdstore
