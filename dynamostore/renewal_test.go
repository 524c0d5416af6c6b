package dynamostore_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRenewalWrittenBackIsRestored: the item of a held number goes back to
// an earlier renewal of its own holder (a table restored by hand, item by
// item, to the same TableId: nothing else shows it). No clone can write a
// value the holder wrote before, so the next renewal says
// lease.ErrRestored and does not extend from the old item.
func TestRenewalWrittenBackIsRestored(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 1, 1, now)), now+20_000)
	key := map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: "1"}}
	old, err := s.Client().GetItem(ctxFor(t), &dynamodb.GetItemInput{TableName: aws.String(s.Table()), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	l = mustExtend(t, s, l, now+30_000)
	if _, err := s.Client().UpdateItem(ctxFor(t), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table()), Key: key,
		UpdateExpression:          aws.String("SET lease_expiry = :e, renewal = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": old.Item["lease_expiry"], ":r": old.Item["renewal"]},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctxFor(t), l, now+40_000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("renewal of an item written back to the holder's earlier renewal: %v, want ErrRestored", err)
	}
	want, _ := strconv.ParseInt(old.Item["lease_expiry"].(*types.AttributeValueMemberN).Value, 10, 64)
	if rec := leasetest.MustGet(t, s, 1); rec.MarkMs != want {
		t.Errorf("record after the refused renewal = %+v, want the written-back mark %d kept", rec, want)
	}
}
