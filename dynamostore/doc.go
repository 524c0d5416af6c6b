// Package dynamostore keeps snowfence machine-number leases in a DynamoDB
// table with conditional writes: the lease table of docs/design.md, one
// item per machine number whose expiry is both the lease and the
// high-water mark, an epoch as fencing token, a claim only when the expiry
// is below the claimer's clock.
//
// # The table
//
// One item per machine number, in a table named "idgen-leases" by default,
// created by CreateTable (on-demand billing, partition key machine_id of
// type N) or by hand:
//
//	machine_id        N  Region×1024 + machine number (region 0: the number itself)
//	holder            S  the holder's identity; absent when free, "QUARANTINED" when quarantined
//	lease_expiry      N  Unix ms: the lease's expiry and the high-water mark (exclusive)
//	lease_epoch       N  the fencing token: +1 on every claim and every quarantine
//	quarantined_mark  N  while quarantined: the mark before the quarantine
//	mark_floor        N  set by RaiseMarks: no release records, and no unquarantine gives back, a mark below it
//	claim_nonce       S  128 random bits written by each claim attempt: a claim of unknown outcome is adopted only by it
//	release_nonce     S  the same for each release, so a retried release that had committed is not reported lost
//	renewal           S  128 random bits written by each renewal, removed by each claim: renewals and releases require
//	                     one their Store value wrote or sent, so a cloned holder process is refused (lease.Renewals)
//	jcur              M  the lease journal's newest entry: the last claim's (below)
//
// Beside them, at machine_ids below every region's (machine_id is never
// negative for a lease), three items of the table's own:
//
//	machine_id -1     schedule S, version N: the fleet schedule (FleetSchedule, SetFleetSchedule)
//	machine_id -2     table_id S, restore_floor N: the TableId the table had when a store first used it,
//	                  and the floor claims start at after a restore was noticed (fence_restore.go)
//	machine_id -3     version N, body S: the table's copy of the region registry (Registry, SetRegistry),
//	                  body the JSON of registry.Registry, written on version = :prev (registry.go); a claim
//	                  reads it with the fleet schedule, in its scan and again after its write, and is
//	                  refused (given back, after the write) while it records another fleet schedule
//
// lease_expiry is both the lease's expiry and its mark: the holder issues
// only timestamps below it, and a claim succeeds only when the claimer's
// clock is past it, so a new holder starts strictly above everything the
// last one could issue, whatever pauses happened in between.
//
// # The requests
//
//	claim     PutItem (journal table) jcur as read IF attribute_not_exists(pk) OR (t = :t AND c = :c AND attribute_not_exists(e))
//	          UpdateItem SET holder = :me, lease_expiry = :expiry, claim_nonce = :nonce,
//	                         lease_epoch = :epoch + 1, jcur = :entry REMOVE renewal
//	          IF attribute_not_exists(machine_id)
//	          OR (lease_expiry = :seen AND lease_expiry < :now AND lease_epoch = :epoch
//	              AND jcur.n = :n AND jcur.t = :t AND jcur.c = :c AND <jcur.e as read>)
//	renew     UpdateItem SET lease_expiry = :new_expiry, renewal = :renewal
//	          IF holder = :me AND lease_epoch = :my_epoch AND lease_expiry < :new_expiry
//	          AND claim_nonce = :my_claim AND lease_expiry >= :keep (the mark last seen, signs.go)
//	          AND (attribute_not_exists(renewal) OR renewal IN (:mine …))
//	          (the mark already past: UpdateItem SET renewal = :renewal on the rest of it)
//	release   UpdateItem REMOVE holder SET lease_expiry = :last, jcur.e = "released", jcur.em = :last
//	          IF holder = :me AND lease_epoch = :my_epoch AND lease_expiry <= :my_mark
//	          AND claim_nonce = :my_claim AND <renewal as in renew>
//	quarantine UpdateItem SET holder = "QUARANTINED", lease_expiry = 4102444800000,
//	                          quarantined_mark = lease_expiry ADD lease_epoch 1
//	                          (and jcur.e = "quarantined" when held: IF jcur.t = lease_epoch …)
//
// A released number
// whose mark is still ahead of the claimer's clock (but within MaxAhead) is
// claimed with a compare on the mark read, and its holder starts at that
// mark. A failed condition (ConditionalCheckFailedException) is classified
// from the item DynamoDB returns with it (ReturnValuesOnConditionCheckFailure
// ALL_OLD) or, where the server does not return it, from a consistent read:
// lease.ErrLost when the holder or epoch changed, lease.ErrQuarantined when
// the number is quarantined. After an error of unknown outcome (a timeout;
// the SDK's own retries, which may repeat a write that committed) the item
// is re-read with a consistent read before deciding. A claim is recognised
// as this attempt's only by its nonce, never by the holder string, which
// two keepers or two processes may share.
//
// Every claim's scan also reads the fleet schedule, and every renewal reads
// it first with a consistent GetItem: DynamoDB cannot condition a write on
// another item, and dynalite (the test server) has no TransactWriteItems,
// so the check is a read before the write, not part of it. It is enough
// because lease.SetSchedule only accepts a change whose first difference is
// at least an hour ahead, longer than any mark a holder reserves: every
// holder on the old schedule renews, and is refused, before then.
//
// The region registry's item is compared with the fleet schedule's too
// (lease.CheckRecordedSchedule: a claim is refused while the registry
// records another schedule than the table's record), read in the claim's
// scan and again, both items with consistent GetItems, after the claim's
// write: a claim made while they came to differ is given back (Release)
// and refused, so a lease is handed out only if the two agreed after it
// was claimed — as if the compare were part of the write.
//
// RaiseMarks fences every holder in the write that raises its mark (holder
// removed, one more epoch), so a claim that survived in a restored table
// cannot extend above the raised mark.
//
// A restore is noticed by a new TableId (fence_restore.go) and, for one that keeps
// the TableId, by the items a Store value saw going back (signs.go): an
// item gone, an epoch lower than one seen, the epoch seen under another
// claim nonce, a mark lower than one seen under the same claim. Either
// fences every lease claimed before (lease.ErrRestored) and starts claims a
// restore window ahead, from a floor the first claim after writes into the
// identity item for every process.
//
// Reads (Get, List, the scan a claim starts with) are consistent.
//
// # The journal
//
// Every claim records who claimed, with which token, and the mark it read,
// as jcur in the number's own item, in the claim's own conditional
// UpdateItem: no claim that took effect lacks its entry, and no entry
// exists for one that did not. Release, Quarantine and RaiseMarks set
// jcur's end (e, em, ed) in their own write — a quarantine or a raise only
// when the condition says jcur is the current holder's. Renewals do not
// touch it.
//
// Older entries are in a journal table of their own (Config.JournalTable,
// "<table>-journal" by default, created by CreateTable: partition key pk
// S "<keyspace>/<machine>", sort key n N). Before its UpdateItem overwrites
// jcur, a claim copies the jcur its scan read there (PutItem, never over a
// copy of the same claim that has an end, never over another claim's
// entry), and the UpdateItem's condition pins jcur's number, token, nonce
// and end and the epoch and mark — everything any other write to the item
// changes — so the copy is exactly the entry overwritten. A claim whose
// copy cannot be made does not proceed. Its entry's number is one more
// than the highest of jcur's and the journal table's (a Query made beside
// the copy), so an item put back to an older copy continues after the
// claims it no longer knows. After the claim it deletes the entry
// lease.JournalRetention claims older (best effort). History merges a
// consistent GetItem of jcur and a consistent Query of the journal table,
// newest 64, oldest first.
//
// The lease item thus holds one entry (about 160 bytes with a 45-character
// holder) whatever the journal's length: a renewal stays one write unit. A
// claim costs a PutItem (1 write unit), a consistent Query (1 read unit), a
// DeleteItem (1 write unit) and, for the registry's compare, two consistent
// GetItems (1 read unit each at most) more (docs/lease-stores.md).
//
// # Permissions
//
// docs/dynamodb-iam-policy.json is an IAM policy limited to the two tables:
// GetItem, UpdateItem, Scan and DescribeTable on the lease table; PutItem,
// GetItem, Query, DeleteItem and DescribeTable on the journal table; and
// CreateTable on both for the command that creates them.
//
// # Interfaces
//
// Store implements lease.Store, the fence contract a Keeper holds numbers
// through (its RegistryReader is the Store itself); lease.Admin, the
// operator's actions the snowfence CLI and the status page use (AdminKeyspace
// is Keyspace as an Admin); and registry.Store, its copy of the region
// registry. TestConformance runs the three suites: leasetest.Run,
// leasetest.RunAdmin and registrytest.Run.
package dynamostore
