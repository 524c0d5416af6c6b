package etcdstore

import (
	"context"
	"fmt"
	"maps"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The restore fence of the etcd store: every sign by which a store can see
// that etcd went back in time (a mark key that fell or vanished, the raft
// term, an owner key bound to another etcd lease) fences the leases
// claimed before it, and a claim after it starts a restore window later.

// withOwnerLease adds to cmps, the compares of a request on a lease whose
// owner key is owner, that the key is still bound to etcd lease id: after a
// restore the same token can come back bound to another claim's etcd
// lease, and a write on it must fail. // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func withOwnerLease(cmps []clientv3.Cmp, owner string, id clientv3.LeaseID) []clientv3.Cmp {
	if revert.Restore {
		return cmps
	}
	return append(cmps, clientv3.Compare(clientv3.LeaseValue(owner), "=", id))
}

// raftTermFell reports whether h, the header of a response to a request
// sent when the raft term was term, shows a lower term: etcd's data was
// replaced (a restore), which fences every lease claimed before. // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func raftTermFell(h *pb.ResponseHeader, term uint64) bool {
	return !revert.Restore && h.RaftTerm != 0 && h.RaftTerm < term
}

// compareMarks compares the marks a claim's read found (kvs, of this
// store's keyspace, and the keyspaces bases whose marks were read after it
// in resp) with the revisions known before the read (revs, foreign:
// knownMarks), noticing a restore if one fell or vanished, and records
// what the read saw for the next claims. // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) compareMarks(epoch uint64, revs map[int]int64, kvs []*mvccpb.KeyValue, bases []string, foreign map[string]map[int]int64, resp *clientv3.TxnResponse) {
	if revert.Restore {
		return
	}
	s.marksWentBack(epoch, s.keys, revs, kvs, resp.Header)
	s.sawMarks(epoch, s.keys.base, kvs)
	for i, b := range bases {
		s.marksWentBack(epoch, keyspace{base: b}, foreign[b], rangeKvs(resp, 2+i), resp.Header)
		s.sawMarks(epoch, b, rangeKvs(resp, 2+i)) // what this read saw is known too, as in its own keyspace
	}
}

// knownMarks returns, before a read of the keyspace is sent, the mark
// revisions known of the current epoch, for marksWentBack to compare reads
// with: own, of this store's keyspace — every mark its leases, or those of
// a Store value sharing its history, wrote or read (setMarkRevLocked, held
// or forgotten since) and every mark their claims read; and foreign, the
// same of every other keyspace under the prefix, by key base. Marks are never deleted and only
// ever rewritten, so a mark key known at revision r is found later at r or
// above, created no later than r — unless etcd's data was replaced. A
// claimer that holds nothing (its number lost or released, the range
// full, its old layout's number released at a cutover) knows the store only
// from these: after a restore with a bumped revision they are its one sign
// (the search found such a claimer blind to a restore, across a cutover).
// // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) knownMarks() (epoch uint64, own map[int]int64, foreign map[string]map[int]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	own = make(map[int]int64)
	if revert.Restore {
		return s.hist.epoch, own, nil // the old behaviour: no marks compared
	}
	for base, revs := range s.hist.marks {
		if base == s.keys.base {
			own = maps.Clone(revs)
			continue
		}
		if foreign == nil {
			foreign = map[string]map[int]int64{}
		}
		foreign[base] = maps.Clone(revs)
	}
	return s.hist.epoch, own, foreign
}

// wentBack looks, in the owner and mark keys of l's number read after a
// compare failed, for a sign that etcd went back in time since the store
// last wrote or read them (before the request was sent), and describes it;
// "" if there is none. A missing owner key alone is no sign (its etcd lease
// may have expired); the signs are:
//   - the owner key has l's token as its create revision but is bound to
//     another etcd lease: the revision repeated after it fell;
//   - the mark key, which this store wrote or read at some mod revision,
//     is gone (marks are never deleted) or has a lower mod revision;
//   - the mark, written by another claim, is below the mark this store
//     last wrote or read: every later claim starts at or above a mark and
//     extends from there, so only a lost history lowers it.
//
// A sign fences the lease, keeping it apart from the claims the restored
// store lets in. // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) wentBack(l *lease.Lease, was claimed, o, m *mvccpb.KeyValue) string {
	if revert.Restore {
		return ""
	}
	n := l.Machine
	if o != nil && uint64(o.CreateRevision) == l.Token && clientv3.LeaseID(o.Lease) != was.etcdLease {
		return fmt.Sprintf("the owner key of machine %d has token %d but is bound to etcd lease %x, not this claim's %x: "+
			"the revision repeated after it fell", n, l.Token, o.Lease, int64(was.etcdLease))
	}
	switch {
	case m == nil && was.markRev > 0:
		return fmt.Sprintf("the mark key of machine %d, seen at revision %d, is gone (marks are never deleted)", n, was.markRev)
	case m != nil && m.ModRevision < was.markRev:
		return fmt.Sprintf("the mark key of machine %d went back from revision %d to %d", n, was.markRev, m.ModRevision)
	case m != nil && was.markRev > 0 && m.CreateRevision > was.markRev:
		// Found by the search: the restore took the key away, another
		// holder that noticed wrote it anew, and its revisions — bumped by
		// the restore — rose past the one seen here.
		return fmt.Sprintf("the mark key of machine %d, seen at revision %d, was created anew at revision %d (marks are never deleted)",
			n, was.markRev, m.CreateRevision)
	}
	if m != nil {
		if mv, err := parseMark(m); err == nil && mv.Token != l.Token && mv.MarkMs < was.markMs {
			return fmt.Sprintf("the mark of machine %d fell from %s to %s (written by %q token %d)", n, lease.FormatMs(was.markMs),
				lease.FormatMs(mv.MarkMs), mv.Holder, mv.Token)
		}
	}
	return ""
}

// fenced returns lease.ErrRestored if l, whose state is h, was claimed
// before the last restore noticed (nil otherwise). The first time, it also
// writes back the mark this store last wrote or read for l's number if
// the restored store holds a lower one: another holder that takes the
// number without noticing the restore (one whose own keys came through
// it untouched) then starts above every timestamp l may have issued,
// instead of at a mark the restore lost. // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) fenced(ctx context.Context, h *held, l *lease.Lease) error {
	err := s.restoredErr(h.epoch, l)
	if err == nil || revert.Restore {
		return err
	}
	s.mu.Lock()
	markMs, done := h.markMs, h.repaired
	h.repaired = true
	s.mu.Unlock()
	if !done && markMs > 0 {
		s.repairMark(ctx, l, markMs)
	}
	return err
}
