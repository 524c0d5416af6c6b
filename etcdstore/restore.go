package etcdstore

import (
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/snowfence/snowfence/lease"
)

// history is what the store remembers of the etcd it talks to, to notice a
// restore from an old backup: etcd's revision never falls and its cluster
// ID never changes, except when the data is replaced. Guarded by Store.mu.
type history struct {
	// epoch counts the restores noticed; leases remember the epoch they
	// were claimed in, and those of an earlier epoch are fenced.
	epoch uint64
	// rev is the highest revision seen in this epoch.
	rev int64
	// cluster is the cluster ID seen (0 before the first response).
	cluster uint64
	// restoredAt is when the last restore was noticed (zero if never).
	restoredAt time.Time
	// what describes the last restore, for error messages.
	what string
}

// baseline is the part of history a request is judged against: whatever
// was seen before it was sent. A response to a request sent earlier may
// arrive after one to a request sent later, so comparing with the latest
// revision would see a fall that is not one.
type baseline struct {
	epoch uint64
	rev   int64
}

// baseline snapshots the history before a request is sent.
func (s *Store) baseline() baseline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return baseline{epoch: s.hist.epoch, rev: s.hist.rev}
}

// observe checks the header of a response to a request sent at b. Every
// read is linearizable, so the revision a response reports is at least any
// revision reported before the request was sent — unless etcd's data was
// replaced. A fall, or a new cluster ID, starts a new epoch: every lease
// claimed before is fenced (lease.ErrRestored), and claims start above the
// moment it was noticed plus RestoreMargin.
func (s *Store) observe(b baseline, h *pb.ResponseHeader) {
	if h == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hist := &s.hist
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
	}
	if what == "" {
		hist.rev = max(hist.rev, h.Revision)
		if hist.cluster == 0 {
			hist.cluster = h.ClusterId
		}
		return
	}
	hist.epoch++
	hist.rev = h.Revision
	hist.cluster = h.ClusterId
	hist.restoredAt = time.Now()
	hist.what = what
	s.log.Error("etcd was restored from an earlier state or replaced; every lease claimed before is fenced",
		"region", s.region, "detail", what, "epoch", hist.epoch, "runbook", "docs/runbook.md")
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

// claimFloorMs is the earliest start a claim may get: the moment the last
// restore was noticed plus RestoreMargin (0 if none was).
func (s *Store) claimFloorMs() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist.restoredAt.IsZero() {
		return 0
	}
	return s.hist.restoredAt.Add(s.restoreMargin).UnixMilli()
}
