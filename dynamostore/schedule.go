package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// The table's own items sit at negative machine_ids, outside every region's
// numbers (machine_id = region×1024 + n, region ≥ 0, so never negative): no
// scan of a region's range, List or RaiseMarks ever sees them.
const (
	// scheduleKey is the fleet schedule's item: schedule S, version N.
	scheduleKey int64 = -1
	// identityKey is the table identity's item (restore.go).
	identityKey int64 = -2
	// registryKey is the item of the table's copy of the region registry
	// (registry.go): version N, body S.
	registryKey int64 = -3

	attrSchedule = "schedule"
	attrVersion  = "version"
)

func metaKey(k int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrMachine: num(k)}
}

// parseSchedule reads the schedule item; nil or empty is the default, v1 at
// version 0.
func parseSchedule(m map[string]types.AttributeValue) (lease.FleetSchedule, error) {
	fs := lease.FleetSchedule{Text: lease.DefaultFleetSchedule}
	if len(m) == 0 {
		return fs, nil
	}
	v, _, err := getNum(m, attrVersion)
	if err != nil {
		return fs, err
	}
	t, ok := m[attrSchedule].(*types.AttributeValueMemberS)
	if !ok {
		return fs, fmt.Errorf("dynamostore: the fleet schedule's item (machine_id %d) has no string attribute %s: it was not written by this store; fix or delete it by hand", scheduleKey, attrSchedule)
	}
	fs.Text, fs.Version = t.Value, v
	return fs, nil
}

// FleetSchedule returns the fleet schedule kept in the table's item at
// machine_id -1 (consistent read): version 0 and "v1" when it was never set.
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: metaKey(scheduleKey), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("dynamostore: read the fleet schedule: %w; retry", err)
	}
	return parseSchedule(out.Item)
}

// SetFleetSchedule writes text as the fleet schedule with version prev+1,
// conditioned on the stored version being prev (no item, for prev 0):
// lease.ErrConflict otherwise. After an error of unknown outcome it reads
// the item again and reports success if it holds text at prev+1.
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	if text == "" || prev < 0 {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule %q at version %d: give a schedule and the version read", lease.ErrInvalid, text, prev)
	}
	// Claims compare the claimer's canonical text with the stored bytes:
	// store the canonical form, and never a schedule that does not parse.
	canon, err := lease.CanonicalSchedule(text)
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule %q: %v", lease.ErrInvalid, text, err)
	}
	text = canon
	cond := "version = :prev"
	vals := map[string]types.AttributeValue{":t": str(text), ":next": num(prev + 1)}
	if prev == 0 {
		cond = "attribute_not_exists(version)"
	} else {
		vals[":prev"] = num(prev)
	}
	want := lease.FleetSchedule{Text: text, Version: prev + 1}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 metaKey(scheduleKey),
		UpdateExpression:                    aws.String("SET schedule = :t, version = :next"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		s.log.Warn("fleet schedule set", "schedule", text, "version", prev+1)
		return want, nil
	}
	if failed, old := conditionFailed(err); failed {
		cur, perr := parseSchedule(old)
		if perr == nil && cur == want {
			return want, nil // an SDK retry of a write that committed
		}
		return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is no longer at version %d (now %+v); read it again and retry", lease.ErrConflict, prev, cur)
	}
	rctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	cur, rerr := s.FleetSchedule(rctx)
	if rerr == nil && cur == want {
		return want, nil
	}
	return lease.FleetSchedule{}, fmt.Errorf("dynamostore: set the fleet schedule to %q at version %d: %w; the outcome is unknown: read it with FleetSchedule and retry", text, prev+1, err)
}
