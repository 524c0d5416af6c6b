package etcdstore

import (
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// history is what the store remembers of the etcd it talks to, to notice
// that etcd went back in time (a restore from an old backup): etcd's
// revision and raft term never fall and its cluster ID never changes, and
// a key this store wrote keeps a mod revision at least the one written,
// except when the data is replaced. Guarded by Store.mu; shared by the
// Store values of every keyspace Keyspace opened from one another.
type history struct {
	// epoch counts the restores noticed; leases remember the epoch they
	// were claimed in, and those of an earlier epoch are fenced.
	epoch uint64
	// rev is the highest revision seen in this epoch.
	rev int64
	// term is the highest raft term seen in this epoch.
	term uint64
	// cluster is the cluster ID seen (0 before the first response).
	cluster uint64
	// noticed is the store's clock when the last restore was noticed;
	// restoredAt the same moment on the system clock (zero if never).
	noticed    snowfence.Reading
	restoredAt time.Time
	// what describes the last restore, for error messages.
	what string
	// marks is, in this epoch, the highest mod revision at which any Store
	// value sharing this history wrote or read each mark key, by keyspace
	// (its key base, "<prefix>/<region>/") and number: the marks its
	// claims read and those of its leases, held or forgotten (knownMarks).
	marks map[string]map[int]int64
}

// baseline is the part of history a request is judged against: whatever
// was seen before it was sent. A response to a request sent earlier may
// arrive after one to a request sent later, so comparing with the latest
// revision would see a fall that is not one.
type baseline struct {
	epoch uint64
	rev   int64
	term  uint64
}

// baseline snapshots the history before a request is sent.
func (s *Store) baseline() baseline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return baseline{epoch: s.hist.epoch, rev: s.hist.rev, term: s.hist.term}
}

// observe checks the header of a response to a request sent at b. Every
// read is linearizable, so the revision and raft term a response reports
// are at least any reported before the request was sent — unless etcd's
// data was replaced. A fall, or a new cluster ID, starts a new epoch:
// every lease claimed before is fenced (lease.ErrRestored), and claims
// start a restore window after the moment it was noticed (claimFloorMs).
func (s *Store) observe(b baseline, h *pb.ResponseHeader) {
	if h == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hist := s.hist
	if b.epoch != hist.epoch {
		// Sent before a restore was noticed; its revision belongs to the
		// old history and says nothing about the new one.
		return
	}
	var what string
	switch {
	case hist.cluster != 0 && h.ClusterId != 0 && h.ClusterId != hist.cluster:
		what = fmt.Sprintf("etcd's cluster ID changed from %x to %x (member %x)", hist.cluster, h.ClusterId, h.MemberId)
	case h.Revision < b.rev:
		what = fmt.Sprintf("etcd's revision fell from %d to %d (cluster %x, member %x)", b.rev, h.Revision, h.ClusterId, h.MemberId)
	case raftTermFell(h, b.term):
		what = fmt.Sprintf("etcd's raft term fell from %d to %d (cluster %x, member %x)", b.term, h.RaftTerm, h.ClusterId, h.MemberId)
	}
	if what == "" {
		hist.rev = max(hist.rev, h.Revision)
		hist.term = max(hist.term, h.RaftTerm)
		if hist.cluster == 0 {
			hist.cluster = h.ClusterId
		}
		return
	}
	s.newEpochLocked(what, h)
}

// noticeRestore starts a new epoch for a sign that etcd went back in time
// found in the keys a response to a request of the given epoch returned,
// unless a restore was noticed since that request was sent.
func (s *Store) noticeRestore(epoch uint64, what string, h *pb.ResponseHeader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.hist.epoch {
		return
	}
	s.newEpochLocked(what, h)
}

// newEpochLocked records a restore noticed now. Called with s.mu held.
func (s *Store) newEpochLocked(what string, h *pb.ResponseHeader) {
	hist := s.hist
	hist.epoch++
	if h != nil {
		hist.rev, hist.term, hist.cluster = h.Revision, h.RaftTerm, h.ClusterId
	}
	hist.noticed = s.clock.Now()
	hist.restoredAt = time.Now()
	hist.what = what
	hist.marks = nil // the keys of the old history
	s.log.Error("etcd was restored from an earlier state or replaced; every lease claimed before is fenced",
		"region", s.region, "detail", what, "epoch", hist.epoch, "runbook", "docs/runbook.md")
}

// claimed is what a store knew of one of its leases before a request:
// the etcd lease its owner key is bound to, and the mark key's mod
// revision and value as last written or read (acknowledged).
type claimed struct {
	etcdLease clientv3.LeaseID
	markRev   int64
	markMs    int64
}

// sawMarks records the mark keys of a read of the keyspace whose key base
// is base, sent in epoch, unless a restore was noticed since it was sent
// (its keys may then be of either history).
func (s *Store) sawMarks(epoch uint64, base string, kvs []*mvccpb.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := keyspace{base: base}
	for _, kv := range kvs {
		if kind, n, ok := ks.parse(string(kv.Key)); ok && kind == kindMark {
			s.knewMarkLocked(epoch, base, n, kv.ModRevision)
		}
	}
}

// knewMarkLocked records that the mark key of number n in the keyspace of
// base was at mod revision rev in epoch. Called with s.mu held.
func (s *Store) knewMarkLocked(epoch uint64, base string, n int, rev int64) {
	if epoch != s.hist.epoch || rev <= 0 {
		return
	}
	if s.hist.marks == nil {
		s.hist.marks = map[string]map[int]int64{}
	}
	if s.hist.marks[base] == nil {
		s.hist.marks[base] = map[int]int64{}
	}
	s.hist.marks[base][n] = max(s.hist.marks[base][n], rev)
}

// marksWentBack checks a read of the whole keyspace ks against the mark
// revisions known before it was sent (knownMarks): a mark key gone, at a lower revision
// or created after the revision seen (marks are never deleted, so only a
// restore and a new claim recreate one) is a restore — the same signs
// wentBack looks for in one number.
func (s *Store) marksWentBack(epoch uint64, ks keyspace, revs map[int]int64, kvs []*mvccpb.KeyValue, h *pb.ResponseHeader) {
	if len(revs) == 0 {
		return
	}
	seen := make(map[int]*mvccpb.KeyValue, len(revs))
	for _, kv := range kvs {
		if kind, n, ok := ks.parse(string(kv.Key)); ok && kind == kindMark {
			seen[n] = kv
		}
	}
	for n, rev := range revs {
		kv := seen[n]
		switch {
		case kv == nil || kv.ModRevision < rev:
			var got int64
			if kv != nil {
				got = kv.ModRevision
			}
			s.noticeRestore(epoch, fmt.Sprintf("the mark key of machine %d, seen at revision %d, is gone or went back (revision %d)", n, rev, got), h)
			return
		case kv.CreateRevision > rev:
			s.noticeRestore(epoch, fmt.Sprintf("the mark key of machine %d, seen at revision %d, was created anew at revision %d (marks are never deleted)",
				n, rev, kv.CreateRevision), h)
			return
		}
	}
}

// restoredErr returns lease.ErrRestored, with what to do, if a lease of the
// given epoch was claimed before the last restore noticed.
func (s *Store) restoredErr(epoch uint64, l *lease.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == s.hist.epoch {
		return nil
	}
	return fmt.Errorf("%w: machine %d region %d token %d was claimed before %s at %s. "+
		"The store may have lost marks above timestamps already issued: stop issuing on this lease, "+
		"and before any holder claims again raise every mark past the last ID issued (RaiseMarks; see docs/runbook.md)",
		lease.ErrRestored, l.Machine, l.Region, l.Token, s.hist.what, s.hist.restoredAt.UTC().Format(time.RFC3339))
}

// restoreWindow is the window a claim's floor keeps after a restore: the
// longest of the claimer's (ClaimRequest.RestoreWindow), MaxRestoreWindow
// and, when set, the store's Config.RestoreMargin. The cut-off holder the
// floor must outlast may be another process with longer timings than the
// claimer's, so the claimer's own window is not enough: every keeper on an
// etcd store is refused a window above MaxRestoreWindow, which therefore
// covers them all.
func (s *Store) restoreWindow(asked time.Duration) time.Duration {
	w := max(asked, MaxRestoreWindow)
	if asked <= 0 || s.marginSet {
		w = max(w, s.restoreMargin)
	}
	return w
}

// MaxRestoreWindow is the longest restore window a holder of an etcd store
// may have (lease.RestoreWindow of its Reserve and SelfFence: 34 s for a
// 30 s TTL, its reservation; the self-fence is bounded by MaxNoticeWindow);
// StartKeeper refuses a longer one. After
// a restore it noticed, the store starts every claim at least this long
// after the moment it noticed.
const MaxRestoreWindow = 40 * time.Second

// MaxRestoreWindow implements lease.Store: the constant MaxRestoreWindow, for the keeper's
// check at start.
func (s *Store) MaxRestoreWindow() time.Duration { return MaxRestoreWindow }
