// Package revert holds the test-only switches that undo, one at a time, the
// fixes that close known paths to a duplicate ID. Each switch is a
// constant set by a build tag and false in every normal build, so the
// compiler removes the code it guards; nothing at run time can turn one on.
//
// They exist to prove that the tests can fail: built with a tag, the search
// in harness/explore (and the test written for that path) must find a
// duplicate. scripts/prove-search runs the search once per tag — and, for
// tablerestore, whose path the search's table restores never take (the
// operator's raise-marks follows each), and highwater, the test written for
// it (TestColdCopyRestoreWhileHoldersRun in pgstore and dynamostore;
// TestEmbeddedDataDirRestoredBehindTheClock in node). For nonce, schedule,
// registry and clone, whose ZooKeeper fence the search reaches too rarely
// to prove (its zookeeper worlds run a few a minute), it runs zkstore's
// test for each beside the search (its and_test); scripts/test runs every
// zkstore test of the tags in its ZooKeeper step (PROVE_TESTS_ONLY), apart
// from the race run.
//
// restore and window are proved by their own tests too. The notice floor
// closes their paths a second time: the claimer that, with either undone,
// started on a number a cut-off or unaware holder still issued on now
// waits the store's notice window, which outlasts every self-fence the
// store accepts, so undone alone neither makes the search find a duplicate
// in 4 min, and searched with notice undone beside it each would be
// "caught" by notice's own duplicate, which proves nothing about it. Their
// tests check the mechanism: etcdstore's TestRestoreSameTokenBumpedNoticedByMark
// and TestRestoreNoticedByRaftTerm (a restore noticed, ErrRestored) and
// lease's TestRestoreWindowCoversTheCutOffHolder (a duplicate, with a
// self-fence only the window's check refuses); on ZooKeeper, zkstore's
// TestRestoreNoticedByStatAlone, TestRestoreRegionShrunk,
// TestPathMadeAnewNoticedByAClaim and TestClaimChecksOrigin (restore: a
// data version or a region's children fell, a new origin id, a restore
// floor in the origin) and
// TestRestoreFloorKeepsTheLongestWindow (window); on Kubernetes,
// k8sstore's TestRestoreNoticedByResourceVersionAlone (restore: a
// resourceVersion fell under one UID). tablerestore's test is built
// with notice undone too: notice alone leaves it without duplicates.
//
//	tag                            undoes
//	snowfence_revert_region        refusing a region other than 0 under a layout without region bits
//	snowfence_revert_nonce         recognising a claim only by its own nonce or etcd lease (adoption, Extend,
//	                               Release, the keeper's re-read), unique default holders
//	snowfence_revert_restore       noticing a restore by every sign a store can see (etcd: a mark that fell or
//	                               vanished, the raft term, a changed etcd lease; PostgreSQL: system identifier
//	                               and timeline; DynamoDB: the table's identity; ZooKeeper: a znode's stat that
//	                               fell, the origin znode's id and the restore floor it carries)
//	snowfence_revert_window        the restore floor of the keeper's and the store's window, not a fixed 10 s
//	snowfence_revert_schedule      the fleet schedule compared on every claim and extension
//	snowfence_revert_tablerestore  noticing, in the rows a lease table returns, a restore its server cannot
//	                               show (an epoch that fell or repeated under another claim, a row gone, a mark
//	                               that fell under one claim): pgstore and dynamostore, and the keeper's re-read
//	snowfence_revert_cutover       across a layout cutover, grants bounded to their layout's instants and
//	                               no issuing after the cutover without a number of the new layout (undone:
//	                               the old number goes on, as a holder keeping its number across it did)
//	snowfence_revert_bind          a keeper feeding one generator only (snowfence.ErrLeaseBound on a second)
//	snowfence_revert_registry      the region registry's rules checked by every keeper at start (region known
//	                               and in service, its home store, the registry's schedule) and the claim's
//	                               compare of the store's fleet schedule record with the registry's
//	snowfence_revert_clone         the renewal value every extension writes and the next extension and the
//	                               release compare (a cloned holder process renews beside the original for ever)
//	snowfence_revert_notice        the wait before a claim's first grant for any holder still issuing on the
//	                               number to notice the claim (the store's MaxNoticeWindow), and the keeper's
//	                               refusal of a self-fence whose notice window is longer
//	snowfence_revert_highwater     the keeper's high-water mark kept outside the store (KeeperConfig.HighWater;
//	                               the embedded etcd's file beside its data directory): grants bounded by it,
//	                               and started above it after a restart. scripts/prove-search proves it by
//	                               node's TestEmbeddedDataDirRestoredBehindTheClock (the search restores no
//	                               store with its holders' host); lease's TestHighWaterKeepsARestartAboveARestore
//	                               fails with it too
//	snowfence_revert_jump          a keeper's grant refused once the wall clock ran ahead of the monotonic clock
//	                               (a host suspend, a step) since the last acknowledged renewal was sent, until
//	                               the next one, and a claim's notice window timed on the monotonic clock too
//	                               (Grant.StartMono). scripts/prove-search proves it by lease's
//	                               TestSuspendedHolderResumesAfterRestore (the search steps no clock of
//	                               a running holder across a restore)
//	snowfence_revert_releasemark   Close's release mark raised to the end of the tick of the latest instant the
//	                               generator asked the keeper about (GrantAt), over an owner's LastIssued read
//	                               before its generator stopped. scripts/prove-search proves it by lease's
//	                               TestKeeperReleaseCoversGrantsHandedOut (the search's owners close their
//	                               generators first)
//	snowfence_revert_unused        a fleet schedule changed at once only while the store holds no lease record,
//	                               checked in the change's own write (etcd's transaction; PostgreSQL's, under
//	                               a lock on the lease table and journal; ZooKeeper's multi-op, on the used
//	                               marker every first lease record creates). scripts/prove-search proves it by
//	                               etcdstore's TestScheduleSetAtOnceOnUnusedStore, pgstore's
//	                               TestScheduleSetAtOnceOnUnusedTable and zkstore's TestScheduleSetAtOnceOnUnusedPath
//	                               and TestScheduleSetAtOnceAfterAClaimSinceTheRead (the search changes no schedule)
//	snowfence_revert_isolation     a PostgreSQL claim refused by its own statement unless its transaction runs
//	                               READ COMMITTED, on every claim (the at-once schedule change's lock orders a
//	                               waiting claim only if the claim's snapshot follows its locks); claims,
//	                               extensions and releases refused on a session left inside a transaction.
//	                               scripts/prove-search proves it by pgstore's TestUnusedScheduleRepeatableRead,
//	                               TestUnusedScheduleSerializable, TestAttackClaimInsideOpenTransaction and
//	                               TestAttackExtendInsideOpenTransaction (the search's stores own their pools)
//	snowfence_revert_zkchild       a ZooKeeper renewal, release or operator write that keeps a claim commits only
//	                               while that claim's own child znode (<n>/c-<claim nonce>) exists, beside the
//	                               data version it read: a version repeats after a restore, a random nonce does
//	                               not. scripts/prove-search proves it by zkstore's TestAttackFrozenRenewalAfterRestore*,
//	                               TestAttackQueuedRenewalLandsAfterRestore and TestAttackQueuedReleaseLandsAfterRestore
//	snowfence_revert_k8srecord     a Kubernetes lease object's write (a JSON patch) commits only while the object holds
//	                               the exact record annotation the write was planned on (a JSON Patch test op), beside
//	                               the resourceVersion it read: a resourceVersion repeats after an etcd restore under
//	                               the API server, a record carrying a random claim nonce and write nonce does not.
//	                               Proved by k8sstore's TestAttackStaleRenewalAfterRestore, TestAttackStaleReleaseAfterRestore
//	                               and TestAttackQueuedUnquarantineLandsAfterRestore (a real kube-apiserver)
//
// # Where each switch is: the fence files
//
// A switch is used only in a product file named fence_<tag>.go, inside a
// small named function whose doc comment says what it keeps apart and
// ends "Load-bearing for uniqueness: change only with scripts/prove-search
// <tag>" (TestSwitchesOnlyInFenceFiles fails on any other use, and on a
// fence file this list leaves out). The switches stay build tags rather
// than patches kept beside the code: a tag's side is type-checked with the
// product on every build, while a patch must be regenerated by hand at
// every edit near the fence; and the file name shows the load-bearing
// lines where a reader of the product looks.
//
//	tag           fence files
//	region        fence_region.go
//	nonce         lease/fence_nonce.go, etcdstore/fence_nonce.go, pgstore/fence_nonce.go, dynamostore/fence_nonce.go, zkstore/fence_nonce.go, k8sstore/fence_nonce.go
//	restore       etcdstore/fence_restore.go, pgstore/fence_restore.go, dynamostore/fence_restore.go, zkstore/fence_restore.go, k8sstore/fence_restore.go
//	window        lease/fence_window.go, etcdstore/fence_window.go, pgstore/fence_window.go, dynamostore/fence_window.go, zkstore/fence_window.go, k8sstore/fence_window.go
//	schedule      etcdstore/fence_schedule.go, pgstore/fence_schedule.go, dynamostore/fence_schedule.go, zkstore/fence_schedule.go, k8sstore/fence_schedule.go
//	tablerestore  lease/fence_tablerestore.go, internal/tablewatch/fence_tablerestore.go
//	cutover       lease/fence_cutover.go
//	bind          lease/fence_bind.go
//	registry      lease/fence_registry.go, etcdstore/fence_registry.go, pgstore/fence_registry.go, dynamostore/fence_registry.go, zkstore/fence_registry.go, k8sstore/fence_registry.go
//	clone         lease/fence_clone.go, pgstore/fence_clone.go, dynamostore/fence_clone.go, zkstore/fence_clone.go, k8sstore/fence_clone.go
//	notice        lease/fence_notice.go
//	highwater     lease/fence_highwater.go
//	jump          fence_jump.go, lease/fence_jump.go
//	releasemark   lease/fence_releasemark.go
//	unused        etcdstore/fence_unused.go, pgstore/fence_unused.go, zkstore/fence_unused.go
//	isolation     pgstore/fence_isolation.go
//	zkchild       zkstore/fence_zkchild.go
//	k8srecord     k8sstore/fence_k8srecord.go
package revert
