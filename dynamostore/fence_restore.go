package dynamostore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// claimFloor checks the table's identity before a claim and returns the
// floor every claim starts at or above (0: none), and the generation of
// the Watch the claim is made in, for remember. stored is the identity
// item read by the claim's scan (nil: none). The first claim after a
// restore was noticed — by a new TableId, or by the items (signs.go) —
// sets the floor and writes it into the identity item, where every Store
// value's claims find it.
// A restored table, which forgot the claims since, fences every holder of it.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) claimFloor(ctx context.Context, req lease.ClaimRequest, stored map[string]types.AttributeValue) (int64, uint64, error) {
	id := s.id
	if revert.Restore {
		floor, gen := id.watch.Floor(req.NowMs, s.restoreWindow(req))
		return floor, gen, nil
	}
	live, err := s.describeTableID(ctx)
	if err != nil {
		return 0, 0, err
	}
	var itemID string
	var itemFloor int64
	if v, ok := stored[attrTableID].(*types.AttributeValueMemberS); ok {
		itemID = v.Value
	}
	if itemFloor, _, err = getNum(stored, attrRestoreFloor); err != nil {
		return 0, 0, err
	}
	id.mu.Lock()
	switch {
	case id.tableID != "" && id.tableID != live:
		s.noticeLocked(id.tableID, live)
	case itemID != "" && itemID != live:
		s.noticeLocked(itemID, live)
	}
	if id.tableID == "" {
		id.tableID = live
	}
	id.checked = time.Now()
	id.mu.Unlock()
	floor, gen := id.watch.Floor(req.NowMs, s.restoreWindow(req))
	floor = max(floor, itemFloor)
	if itemID != live || floor > itemFloor {
		if err := s.writeIdentity(ctx, live, floor); err != nil {
			return 0, 0, err
		}
	}
	return floor, gen, nil
}

// extendIdentity is the restore check of Extend: it compares the TableId
// if the last check is older than Config.IdentityEvery, and refuses with
// lease.ErrRestored a lease claimed before a restore this Store noticed —
// by the TableId or by the items (signs.go) — or not claimed through this
// Store value at all, once it noticed one.
// Load-bearing for uniqueness: change only with scripts/prove-search restore.
func (s *Store) extendIdentity(ctx context.Context, l *lease.Lease) error {
	id := s.id
	if !revert.Restore {
		id.mu.Lock()
		due := s.cfg.IdentityEvery > 0 && id.tableID != "" && time.Since(id.checked) >= s.cfg.IdentityEvery
		id.mu.Unlock()
		if due {
			live, err := s.describeTableID(ctx)
			if err != nil {
				return err
			}
			id.mu.Lock()
			id.checked = time.Now()
			if id.tableID != live {
				s.noticeLocked(id.tableID, live)
			}
			id.mu.Unlock()
		}
	}
	if what, at, fenced := id.watch.Restored(l.Claim); fenced {
		return tablewatch.Fenced(s.table, l, what, at)
	}
	return nil
}
