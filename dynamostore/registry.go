package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/snowfence/snowfence/lease/registry"
)

var _ registry.Store = (*Store)(nil)

// attrBody is the registry item's body: registry.Encode's JSON.
const attrBody = "body"

// Registry returns the region registry kept in the table's item at
// machine_id -3 (consistent read), shared by every region of the table:
// the zero Registry when it was never written.
func (s *Store) Registry(ctx context.Context) (registry.Registry, error) {
	if err := s.open(); err != nil {
		return registry.Registry{}, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: metaKey(registryKey), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return registry.Registry{}, fmt.Errorf("dynamostore: read the region registry: %w; retry", err)
	}
	return parseRegistry(out.Item)
}

// SetRegistry writes next into the registry's item with one conditional
// UpdateItem: if the item has no version, for version 1, else if its
// version is next.Version-1. On a failed condition the item DynamoDB
// returns with it (ReturnValuesOnConditionCheckFailure ALL_OLD; a
// consistent read where none comes back) decides:
// equal to next is success (an SDK retry of a write that committed, or a
// second copy on the same table), anything else
// registry.ErrConflict naming the version found. After an error of
// unknown outcome it reads the item again and reports success if it holds
// next.
func (s *Store) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.writeRegistry(ctx, next, false)
}

// CreateRegistry writes r into the registry's item if it has no version
// (SetRegistry's condition for version 1), whatever r's version; a stored
// registry equal to r is success, any other registry.ErrConflict.
func (s *Store) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.writeRegistry(ctx, r, true)
}

// RegistryIdentity returns "dynamodb <TableArn> table id <TableId>" from
// DescribeTable (the call the restore checks make): the ARN names the
// account, the AWS region and the table, and the TableId tells a table
// from another of the same name, as one deleted and created again or
// restored from a backup.
func (s *Store) RegistryIdentity(ctx context.Context) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	t, err := s.describeTable(ctx)
	if err != nil {
		return "", err
	}
	arn := aws.ToString(t.TableArn)
	if arn == "" {
		return "", fmt.Errorf("dynamostore: DescribeTable of %s returned no TableArn", s.table)
	}
	return fmt.Sprintf("dynamodb %s table id %s", arn, *t.TableId), nil
}

// writeRegistry is SetRegistry, or with create CreateRegistry.
func (s *Store) writeRegistry(ctx context.Context, next registry.Registry, create bool) error {
	if err := s.open(); err != nil {
		return err
	}
	body, err := registry.Encode(next)
	if err != nil {
		return fmt.Errorf("dynamostore: write the region registry: %w", err)
	}
	cond := "#v = :prev"
	vals := map[string]types.AttributeValue{":b": str(string(body)), ":next": num(next.Version)}
	if create || next.Version == 1 {
		cond = "attribute_not_exists(#v)"
	} else {
		vals[":prev"] = num(next.Version - 1)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 metaKey(registryKey),
		UpdateExpression:                    aws.String("SET #b = :b, #v = :next"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            map[string]string{"#b": attrBody, "#v": attrVersion},
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		s.log.Warn("wrote the region registry", "version", next.Version, "regions", len(next.Regions))
		return nil
	}
	if failed, old := conditionFailed(err); failed {
		cur, perr := parseRegistry(old)
		if len(old) == 0 {
			// No item came back: there is none, or the server does not
			// return it (dynalite without the shim). A consistent read
			// tells.
			cur, perr = s.Registry(ctx)
		}
		if perr != nil {
			return perr
		}
		where := fmt.Sprintf("the registry's item (machine_id %d)", registryKey)
		if create {
			return registry.CreateConflict(where, cur, next)
		}
		return registry.Conflict(where, cur, next)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RequestTimeout)
	defer cancel()
	if cur, rerr := s.Registry(rctx); rerr == nil && cur.Equal(next) {
		return nil
	}
	return fmt.Errorf("dynamostore: write the region registry at version %d: %w; the outcome is unknown: read it again", next.Version, err)
}

// parseRegistry reads the registry's item; nil or empty is the zero
// Registry.
func parseRegistry(m map[string]types.AttributeValue) (registry.Registry, error) {
	if len(m) == 0 {
		return registry.Registry{}, nil
	}
	version, _, err := getNum(m, attrVersion)
	var r registry.Registry
	if err == nil {
		if b, ok := m[attrBody].(*types.AttributeValueMemberS); ok {
			r, err = registry.Decode([]byte(b.Value))
		} else {
			err = fmt.Errorf("no string attribute %s", attrBody)
		}
	}
	if err == nil && r.Version != version {
		err = fmt.Errorf("its body is at version %d, its attribute %s at %d", r.Version, attrVersion, version)
	}
	if err != nil {
		return registry.Registry{}, fmt.Errorf("dynamostore: the region registry's item (machine_id %d) is not one this store wrote: %v (was it written by hand?); "+
			"put back the item of another region's copy of the registry (snowfence regions list there), or delete the item if no registry was ever meant to be here",
			registryKey, err)
	}
	return r, nil
}
