package zkstore

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The restore fence of the ZooKeeper store, its own signs: what a znode's
// stat shows (a data version or a zxid that fell, a znode created anew),
// and the origin znode — its id, which a path made anew or another
// ensemble's data changes, and the restore floor it carries to every
// process. A sign fences every lease claimed before it, and a claim after
// it starts a restore window later. The records' own signs (an epoch that
// fell, a record gone...) are package tablewatch's (fence_tablerestore.go
// there).

// statSign describes the sign, in now, that znode what went back since
// its stat was seen as before (zero: never seen), or returns "". For a
// lease znode the version and zxid are its data version and the zxid of
// its last write; for the region's znode, its children's version and the
// zxid of the last child created (every claim of a number never claimed
// creates one). Such a sign is often the only one: a restore that takes
// back renewals which moved no mark leaves every record as it was.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func statSign(what string, before, now zstat) string {
	switch {
	case revert.Restore:
		return ""
	case before.czxid == 0:
		return ""
	case now.czxid != before.czxid:
		return fmt.Sprintf("%s was created at zxid %#x, and is now one created at zxid %#x: the store deletes no znode",
			what, before.czxid, now.czxid)
	case now.version < before.version:
		return fmt.Sprintf("%s was seen at version %d, and is now at %d: every write raises it", what, before.version, now.version)
	case now.mzxid < before.mzxid:
		return fmt.Sprintf("%s was seen written at zxid %#x, and is now written at %#x: zxids only grow", what, before.mzxid, now.mzxid)
	}
	return ""
}

// claimFloor reads the origin before a claim and returns the floor every
// claim starts at or above (0: none), the Watch generation the claim is
// made in, for Remember, and the origin's data version, which the claim's
// write checks (tryClaim): a claim commits only while the origin — its id
// and the floor — is the one read. gen0 is the generation before the claim's reads
// were sent. An origin id other than the one this Store (or a Keyspace
// sibling) saw first — the path wiped and made again, another ensemble's
// data — is a restore. The first claim after one was noticed, by the id
// or by the records (signs.go), sets the floor and writes it into the
// origin, where every Store value's claims find it.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) claimFloor(ctx context.Context, req lease.ClaimRequest, gen0 uint64) (floorMs int64, gen uint64, ver int32, err error) {
	if revert.Restore {
		floorMs, gen = s.id.watch.Floor(req.NowMs, s.restoreWindow(req))
		return floorMs, gen, 0, nil
	}
	o, ver, err := s.readOrigin(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	id := s.id
	id.mu.Lock()
	was := id.origin
	if was == "" {
		id.origin = o.ID
	}
	id.mu.Unlock()
	if was != "" && was != o.ID {
		what := fmt.Sprintf("the origin znode %s holds id %s, and this store first saw %s: the data under the path was made anew or "+
			"restored from another history", s.originPath(), o.ID, was)
		if id.watch.Notice(gen0, what) {
			s.judged(what)
		}
		id.mu.Lock()
		id.origin = o.ID
		id.mu.Unlock()
	}
	floor, gen := id.watch.Floor(req.NowMs, s.restoreWindow(req))
	if floor > o.FloorMs {
		if o, ver, err = s.writeFloor(ctx, o, ver, floor); err != nil {
			return 0, 0, 0, err
		}
	}
	return max(floor, o.FloorMs), gen, ver, nil
}

// originCheck is the op of a claim's multi-op that commits it only while
// the origin znode is at version ver, the one claimFloor read: a restore
// floor written meanwhile (another process noticed a restore), or an
// origin made anew, fails the claim, which reads again.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) originCheck(ver int32) []any {
	if revert.Restore {
		return nil
	}
	return []any{&zk.CheckVersionRequest{Path: s.originPath(), Version: ver}}
}
