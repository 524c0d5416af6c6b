package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// checkClaimRegistry returns lease.ErrSchedule if the registry item reg,
// as the claim's scan read it, records a fleet schedule other than fleet,
// the record: a holder then never claims under a schedule the registry
// does not record. Load-bearing for uniqueness: change only with scripts/prove-search registry.
func checkClaimRegistry(reg map[string]types.AttributeValue, fleet lease.FleetSchedule) error {
	if revert.Registry {
		return nil
	}
	r, err := parseRegistry(reg)
	if err != nil {
		return err
	}
	return lease.CheckRecordedSchedule(r, fleet)
}

// confirmRegistry reads the fleet schedule record and the registry's copy
// again, consistently, after the claim of l committed, and gives l back
// (Release, keeping its mark), with lease.ErrSchedule, if the registry now
// records a fleet schedule other than the record. DynamoDB cannot
// condition the claim's UpdateItem on other items, and the store writes no
// transactions (dynalite, the test server, has no TransactWriteItems), so
// the scan's check is a read before the write; this read after it closes
// the gap: a lease is returned only if the two agreed after it was
// claimed, before anything is issued on it. A registry written later is
// one written after the claim, as it would be on any store.
// It keeps a holder from claiming under a schedule the registry does not record.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func (s *Store) confirmRegistry(ctx context.Context, l *lease.Lease) error {
	if revert.Registry {
		return nil
	}
	read := func(key int64) (map[string]types.AttributeValue, error) {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: metaKey(key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		return out.Item, nil
	}
	fleetItem, err := read(scheduleKey)
	var regItem map[string]types.AttributeValue
	if err == nil {
		regItem, err = read(registryKey)
	}
	var cerr error
	if err == nil {
		var fleet lease.FleetSchedule
		var reg registry.Registry
		if fleet, cerr = parseSchedule(fleetItem); cerr == nil {
			if reg, cerr = parseRegistry(regItem); cerr == nil {
				cerr = lease.CheckRecordedSchedule(reg, fleet)
			}
		}
	}
	if err == nil && cerr == nil {
		return nil
	}
	if rerr := s.Release(context.WithoutCancel(ctx), l, max(l.MarkMs, l.StartMs)); rerr != nil {
		s.log.Warn("giving back a claim made while the registry came to differ failed; it frees itself at its mark", "machine", l.Machine, "epoch", l.Token, "error", rerr)
	}
	if err != nil {
		return fmt.Errorf("dynamostore: claim machine %d region %d: reading the region registry and the fleet schedule again after the claim failed: %w; the claim was given back; retry",
			l.Machine, s.region, err)
	}
	return cerr
}
