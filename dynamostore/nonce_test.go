package dynamostore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestSharedHolderLosesRace is issue 10's path 2, deterministic: claimer 1
// takes number 3 (epoch 1); claimer 2 — same holder string, same clock
// reading, same LeaseFor — found 3 free in its scan and now writes. Its
// condition fails and DynamoDB (the shim) returns claimer 1's item, whose
// holder and expiry are exactly what claimer 2 wrote. Claimer 2 must get
// no lease: adopting that item would have both extending and minting on 3
// with epoch 1.
func TestSharedHolderLosesRace(t *testing.T) {
	s := newStore(t)
	other := connect(t, s.Table(), 0)
	now := baseMs()
	first := leasetest.MustClaim(t, s, req("shared", 3, 3, now))
	l, err := dynamostore.ClaimAsIfFree(ctxFor(t), other, req("shared", 3, 3, now), 3)
	if err != nil || l != nil {
		t.Fatalf("claim that lost the race to %+v with the same holder and clock = %+v, %v; want no lease", first, l, err)
	}
	if l, err := other.Claim(ctxFor(t), req("shared", 3, 3, now)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("second Claim with the same holder and clock = %+v, %v; want ErrNoFreeNumber", l, err)
	}
	if rec := leasetest.MustGet(t, s, 3); rec.Holder != "shared" || rec.Token != 1 {
		t.Fatalf("record %+v, want claimer 1's epoch 1 untouched", rec)
	}
	mustExtend(t, s, first, now+20_000)
}

// TestDynaliteAloneOmitsItem shows why the store tests run through
// internal/testkit/dynashim: on dynalite alone, the lost race above fails its
// condition with no item, so the store never reaches the ALL_OLD path it
// takes on DynamoDB.
func TestDynaliteAloneOmitsItem(t *testing.T) {
	table := tableFor(t)
	s := connectAt(t, endpoint(t), table, dynamostore.Config{})
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	leasetest.MustClaim(t, s, req("shared", 3, 3, now))
	_, err := s.Client().UpdateItem(ctxFor(t), &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: "3"}},
		UpdateExpression:                    aws.String("SET holder = :me"),
		ConditionExpression:                 aws.String("attribute_not_exists(machine_id)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: "x"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("failed condition on dynalite: %v", err)
	}
	if ccf.Item != nil {
		t.Fatalf("dynalite returned the item %v with a failed condition: it now behaves as DynamoDB does", ccf.Item)
	}
	// The same write through the shim carries it.
	via := connectAt(t, shimEndpoint(t), table, dynamostore.Config{})
	_, err = via.Client().UpdateItem(ctxFor(t), &dynamodb.UpdateItemInput{
		TableName:                           aws.String(table),
		Key:                                 map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: "3"}},
		UpdateExpression:                    aws.String("SET holder = :me"),
		ConditionExpression:                 aws.String("attribute_not_exists(machine_id)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: "x"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if !errors.As(err, &ccf) || ccf.Item == nil {
		t.Fatalf("failed condition through the shim: %v, want one carrying the item", err)
	}
}

// TestDroppedClaimReplyAdopted: the reply to a claim that committed is
// lost. With the SDK's retries, the retry fails its condition and the item
// returned carries this attempt's nonce; without retries, the store
// re-reads the item and finds it. Either way the claim is adopted — the
// nonce costs no availability — and no one else holds the number.
func TestDroppedClaimReplyAdopted(t *testing.T) {
	for _, attempts := range []int{0, 1} {
		t.Run(map[int]string{0: "SDK retry", 1: "re-read"}[attempts], func(t *testing.T) {
			sh := newShim(t)
			table := tableFor(t)
			s, err := dynamostore.Connect(ctxFor(t), dynamostore.ClientConfig{
				Endpoint: sh.URL(), AWSRegion: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test", RetryMaxAttempts: attempts,
			}, dynamostore.Config{Table: table, RequestTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateTable(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
			now := baseMs()
			// A first claim records the table's identity (a write of its
			// own), so the reply dropped next is the claim's.
			leasetest.MustClaim(t, s, req("h", 3, 3, now))
			sh.DropNextReplies(1)
			l := leasetest.MustClaim(t, s, req("h", 4, 4, now))
			if dropped, _ := sh.Stats(); dropped != 1 {
				t.Fatalf("shim dropped %d replies, want the claim's", dropped)
			}
			if rec := leasetest.MustGet(t, s, 4); rec.Holder != "h" || rec.Token != l.Token || l.Token != 1 {
				t.Fatalf("adopted lease %+v, record %+v", l, rec)
			}
			mustExtend(t, s, l, now+20_000)
		})
	}
}

// TestSharedHolderKeepersRace: two keepers on the real clock, sharing one
// holder string (two keepers of one process with the default holder), race
// for one number, 20 times. Exactly one may hold it.
func TestSharedHolderKeepersRace(t *testing.T) {
	s := newStore(t)
	for round := range 20 {
		var wg sync.WaitGroup
		ks := make([]*lease.Keeper, 2)
		errs := make([]error, 2)
		for i := range ks {
			wg.Go(func() {
				ks[i], errs[i] = leasetest.StartKeeper(ctxFor(t), lease.KeeperConfig{
					Store: s, Holder: "one-process", Range: &lease.Range{Lo: 5 + round, Hi: 5 + round},
					LeaseFor: 10 * time.Second, RenewEvery: 2 * time.Second, SelfFence: 5 * time.Second,
				})
			})
		}
		wg.Wait()
		var held []lease.Status
		for i, k := range ks {
			switch {
			case errs[i] == nil:
				held = append(held, k.Status())
			case !errors.Is(errs[i], lease.ErrNoFreeNumber):
				t.Errorf("round %d: keeper %d: %v, want a lease or ErrNoFreeNumber", round, i, errs[i])
			}
		}
		if len(held) == 2 {
			t.Errorf("round %d: both keepers hold the one number: %+v and %+v", round, held[0], held[1])
		}
		if len(held) == 0 {
			t.Errorf("round %d: neither keeper got the free number", round)
		}
		for _, k := range ks {
			if k != nil {
				k.Close(context.Background(), lease.UnknownIssued) // no generator
			}
		}
	}
}
