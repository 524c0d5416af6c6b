package zkstore

import (
	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/revert"
)

// The claim child: every lease record with a claim nonce has a child
// znode named after it, <path>/leases/<region>/<n>/c-<claim nonce>,
// written in the same Multi as the record. A write that starts a claim
// deletes the old claim's child and creates its own; every write that
// keeps a claim checks that the claim's child still exists. The znode's
// data version alone cannot keep writes apart: a restore brings old
// versions back, and once another claimer has written the znode as often
// as the lost history did, a write planned on the old history (a process
// frozen between its read and its Set, a request left queued in a
// reconnecting session) matches a version it never read. A nonce is
// random: it cannot repeat, so a write planned on claim X commits only
// while claim X's record is the znode's.

// childPrefix begins the name of a claim child.
const childPrefix = "c-"

// childPath is the claim child of number n's record under claim nonce claim.
func (s *Store) childPath(n int, claim string) string { return s.path(n) + "/" + childPrefix + claim }

// keepOps returns the ops of a write of data to number n's znode, planned
// on a read at version version whose record carries claim nonce claim,
// that keeps that claim (a renewal, a release, an operator's write on a
// held record): the check that claim's child exists, then the Set on the
// version. Load-bearing for uniqueness: change only with
// scripts/prove-search zkchild.
func (s *Store) keepOps(n int, claim string, data []byte, version int32) []any {
	set := &zk.SetDataRequest{Path: s.path(n), Data: data, Version: version}
	if revert.ZKChild || claim == "" {
		return []any{set}
	}
	return []any{&zk.CheckVersionRequest{Path: s.childPath(n, claim), Version: -1}, set}
}

// claimOps returns the ops that replace znode z of number n, as read, by
// rec, a record under a new claim nonce (a claim): the Create of the
// znode and of rec's child for a number without one; otherwise the Set on
// the version read, the Delete of the old claim's child (which fails
// unless the old claim is still the znode's) and the Create of rec's
// child. Load-bearing for uniqueness: change only with
// scripts/prove-search zkchild.
func (s *Store) claimOps(n int, z znode, rec record) []any {
	child := &zk.CreateRequest{Path: s.childPath(n, rec.Claim), Acl: s.acl()}
	if !z.exists {
		return []any{&zk.CreateRequest{Path: s.path(n), Data: encode(rec), Acl: s.acl()}, child}
	}
	ops := []any{&zk.SetDataRequest{Path: s.path(n), Data: encode(rec), Version: z.stat.version}}
	if z.rec.Claim != "" && !revert.ZKChild {
		ops = append(ops, &zk.DeleteRequest{Path: s.childPath(n, z.rec.Claim), Version: -1})
	}
	return append(ops, child)
}
