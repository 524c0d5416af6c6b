package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// A point-in-time restore (or a restore from an on-demand backup) always
// creates a new table: DescribeTable gives it a new TableId, while its items
// are those of the moment restored. The store notices it two ways:
//
//   - It remembers the TableId it saw first and compares it on every Claim
//     and, at most every Config.IdentityEvery, on Extend. A change is a
//     restore: every lease this Store value (or a Store Keyspace opened
//     from it, or it from) claimed before is refused with
//     lease.ErrRestored at its next Extend, and claims start at least the
//     restore window after the moment it noticed.
//   - It writes the TableId into the table itself (the item at machine_id
//     -2, attribute table_id) on first use. A restored table carries the
//     TableId of the table it was restored from, so even a Store value that
//     started after the restore (a restarted process) sees the two differ.
//
// The Store that notices writes the new TableId and the claim floor
// (restore_floor, Unix ms) into that item, so every other Store value,
// fresh or not, starts its claims at or above it. Not noticed: a restore of
// a backup taken before any store of this version used the table (no
// table_id item yet) by a Store value that never saw the old table; and a
// restore's effect on holders that neither claim nor reach an identity
// check — which is why the runbook keeps a restored table unreachable to
// holders until raise-marks has fenced them.
//
// A restore that keeps the TableId (a copy of dynalite's or DynamoDB
// Local's data put back, items written back by hand) shows only in the
// items; signs.go notices it there, with the same consequences.
const (
	attrTableID      = "table_id"
	attrRestoreFloor = "restore_floor"
)

// identity is what a Store remembers of its table. The Store values
// Keyspace opened from one another share it: the TableId is the table's,
// so a restore one of them notices fences the leases of every keyspace
// and floors the claims of every keyspace, and a sibling opened later
// knows of it.
type identity struct {
	mu      sync.Mutex
	tableID string    // the TableId seen first ("" before the first check)
	checked time.Time // when DescribeTable was last called (real time: it rates the calls)
	// journalChecked: the journal table was found to exist
	// (checkJournalTable).
	journalChecked bool
	// watch is what the Store values remember of the items they saw and
	// the restores they noticed, by a new TableId or by the items
	// themselves (signs.go): the generation each lease was claimed in (by
	// claim nonce: an epoch can repeat across a restore, a nonce cannot),
	// and the restore floor.
	watch tablewatch.Watch
}

// MaxRestoreWindow is the longest restore window a holder of a DynamoDB
// store may have (lease.RestoreWindow of its Reserve and SelfFence: 5 min
// 31 s at the table timings); StartKeeper refuses a longer one.
const MaxRestoreWindow = 6 * time.Minute

// MaxRestoreWindow implements lease.Store: the constant MaxRestoreWindow,
// for the keeper's check at start.
func (s *Store) MaxRestoreWindow() time.Duration { return MaxRestoreWindow }

// describeTableID returns the table's TableId from DescribeTable.
func (s *Store) describeTableID(ctx context.Context) (string, error) {
	t, err := s.describeTable(ctx)
	if err != nil {
		return "", err
	}
	return *t.TableId, nil
}

// describeTable returns the table's description from DescribeTable, with
// a TableId, refusing a global table (notGlobal).
func (s *Store) describeTable(ctx context.Context) (*types.TableDescription, error) {
	out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.table)})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: describe table %s (to notice a point-in-time restore): %w; check the credentials allow dynamodb:DescribeTable", s.table, err)
	}
	if out.Table == nil || out.Table.TableId == nil || *out.Table.TableId == "" {
		return nil, errors.New("dynamostore: DescribeTable returned no TableId")
	}
	if err := notGlobal(s.table, out.Table); err != nil {
		return nil, err
	}
	return out.Table, nil
}

// notGlobal refuses a global table. Its replicas check a condition each
// against its own copy and settle conflicting writes by last writer wins,
// so two regions' claims of one number can both succeed. Checked with the
// identity, on every Claim and periodically on Extend, so a table made
// global after the store started is refused too.
func notGlobal(table string, d *types.TableDescription) error {
	if len(d.Replicas) == 0 && d.GlobalTableVersion == nil {
		return nil
	}
	return fmt.Errorf("%w: dynamostore: table %s is a DynamoDB global table (%d replicas): its replicas check conditions "+
		"independently, so two of them can grant one machine number; remove the replicas and give each AWS region "+
		"its own lease table (docs/lease-stores.md)", lease.ErrInvalid, table, len(d.Replicas))
}

// noticeLocked records a restore seen by a new TableId (id.mu held):
// leases claimed so far are fenced, and the next claim sets the floor.
func (s *Store) noticeLocked(was, live string) {
	id := s.id
	s.log.Error("the lease table was restored (its TableId changed): every lease claimed before is fenced, and claims start after the restore window; run raise-marks before letting holders back",
		"was", was, "now", live)
	id.watch.Notice(id.watch.Gen(), fmt.Sprintf("the table's TableId changed from %s to %s (a point-in-time restore)", was, live))
	id.tableID = live
}

// writeIdentity records the table's TableId and the claim floor in the
// identity item, never lowering a floor already there.
func (s *Store) writeIdentity(ctx context.Context, live string, floor int64) error {
	vals := map[string]types.AttributeValue{":id": str(live)}
	expr := "SET table_id = :id"
	cond := ""
	if floor > 0 {
		expr += ", restore_floor = :f"
		cond = "attribute_not_exists(restore_floor) OR restore_floor < :f"
		vals[":f"] = num(floor)
	}
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: metaKey(identityKey),
		UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	_, err := s.db.UpdateItem(ctx, in)
	if f, _ := conditionFailed(err); f {
		// A higher floor is already there: record only the identity.
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.table), Key: metaKey(identityKey),
			UpdateExpression: aws.String("SET table_id = :id"), ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(live)},
		})
	}
	if err != nil {
		return fmt.Errorf("dynamostore: record the table's identity: %w; retry", err)
	}
	return nil
}

// remember records a lease claimed in generation gen of the Watch (as
// claimFloor returned it). If a restore was noticed since — the claim may
// have started below the floor that restore sets — it returns an error,
// and the lease is refused at its first extension.
func (s *Store) remember(l *lease.Lease, gen uint64) error {
	if !s.id.watch.Remember(l.Claim, gen) {
		return fmt.Errorf("dynamostore: machine %d epoch %d was claimed while a restore of the table was being noticed; claim again (it frees itself at %s)",
			l.Machine, l.Token, lease.FormatMs(l.MarkMs))
	}
	return nil
}

// forget drops a lease that is over from what remember records.
func (s *Store) forget(l *lease.Lease) { s.id.watch.Forget(l.Claim) }
