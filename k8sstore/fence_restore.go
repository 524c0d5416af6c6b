package k8sstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The restore fence of the Kubernetes store, its own signs: what an
// object's metadata shows (a resourceVersion that fell under one UID, an
// object made anew under another), and the origin object — its id, which
// a prefix made anew or another cluster's data changes, and the restore
// floor it carries to every process. A sign fences every lease claimed
// before it, and a claim after it starts a restore window later. The
// records' own signs (an epoch that fell, a record gone...) are package
// tablewatch's (fence_tablerestore.go there).

// metaSign describes the sign, in now, that object what went back since
// its metadata was seen as before (zero: never seen), or returns "". A
// resourceVersion that is no number (0 here) is not compared: only
// kube-apiserver on etcd is known to write numbers that grow.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func metaSign(what string, before, now objMeta) string {
	switch {
	case revert.Restore:
		return ""
	case before.uid == "" || now.uid == "":
		return ""
	case now.uid != before.uid:
		return fmt.Sprintf("%s had UID %s, and now has UID %s: it was made anew, and the store deletes no object", what, before.uid, now.uid)
	case before.rv != 0 && now.rv != 0 && now.rv < before.rv:
		return fmt.Sprintf("%s was seen at resourceVersion %d, and is now at %d: every write raises it", what, before.rv, now.rv)
	}
	return ""
}

// claimFloor reads the origin before a claim and returns the floor every
// claim starts at or above (0: none), the Watch generation the claim is
// made in, for Remember, and the origin as read, which the claim checks
// again once its write committed (originUnchanged). gen0 is the generation
// before the claim's reads were sent. An origin id other than the one this
// Store (or a Keyspace sibling) saw first — the prefix's objects deleted
// and made again, another cluster's data — is a restore. The first claim
// after one was noticed, by the id or by the records (signs.go), sets the
// floor and writes it into the origin, where every Store value's claims
// find it.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) claimFloor(ctx context.Context, req lease.ClaimRequest, gen0 uint64) (floorMs int64, gen uint64, or originRead, err error) {
	if revert.Restore {
		floorMs, gen = s.id.watch.Floor(req.NowMs, s.restoreWindow(req))
		return floorMs, gen, originRead{}, nil
	}
	if or, err = s.readOrigin(ctx); err != nil {
		return 0, 0, originRead{}, err
	}
	id := s.id
	id.mu.Lock()
	was := id.origin
	if was == "" {
		id.origin = or.o.ID
	}
	id.mu.Unlock()
	if was != "" && was != or.o.ID {
		what := fmt.Sprintf("the origin object %s holds id %s, and this store first saw %s: the objects under the prefix were made anew "+
			"or restored from another history", s.originName(), or.o.ID, was)
		if id.watch.Notice(gen0, what) {
			_ = s.judged(what)
		}
		id.mu.Lock()
		id.origin = or.o.ID
		id.mu.Unlock()
	}
	floor, gen := id.watch.Floor(req.NowMs, s.restoreWindow(req))
	if floor > or.o.FloorMs {
		if or, err = s.writeFloor(ctx, or, floor); err != nil {
			return 0, 0, originRead{}, err
		}
	}
	return max(floor, or.o.FloorMs), gen, or, nil
}

// originUnchanged reads the origin again after a claim's write committed
// and returns an error unless it is still or, the origin the claim read
// (the same resourceVersion and record): a restore floor written
// meanwhile, or an origin made anew, fails the claim, which the caller
// retries above the new floor. Kubernetes writes one object at a time, so
// the check follows the write rather than joining it (zkstore's multi-op
// checks the origin's version in the claim's own write); it keeps the
// same order: a floor written before the claim committed is seen by this
// read, and a floor written after it is one the claim preceded, as any
// claim made before the restore was noticed.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) originUnchanged(ctx context.Context, or originRead) error {
	if revert.Restore {
		return nil
	}
	rctx, cancel := s.rereadCtx(ctx)
	defer cancel()
	now, err := s.readOrigin(rctx)
	if err != nil {
		return fmt.Errorf("the claim committed, and reading the origin object again failed (%w), so it may have committed below a "+
			"restore floor written meanwhile", err)
	}
	if now.rvText != or.rvText || now.raw != or.raw {
		return fmt.Errorf("the origin object %s changed while the claim was made (it held %s, now %s): a restore floor was written "+
			"or the origin made anew", s.originName(), or.raw, now.raw)
	}
	return nil
}
