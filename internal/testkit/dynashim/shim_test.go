package dynashim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

const endpointEnv = "SNOWFENCE_TEST_DYNAMODB_ENDPOINT"

func upstream(t *testing.T) string {
	t.Helper()
	ep := os.Getenv(endpointEnv)
	if ep == "" {
		testenv.Missing(t, endpointEnv+" is not set: run `export "+endpointEnv+"=$(scripts/services/dynalite.sh start)` (needs Node.js and npm)")
	}
	return ep
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startShim(t *testing.T) *dynashim.Shim {
	t.Helper()
	s, err := dynashim.Start(upstream(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// client returns an SDK client on endpoint making at most attempts tries
// per request.
func client(t *testing.T, endpoint string, attempts int) *dynamodb.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(ctxFor(t), config.WithRegion("us-east-1"), config.WithRetryMaxAttempts(attempts),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

var seq atomic.Int64

// table creates a table with partition key k (N) and waits until active.
func table(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := fmt.Sprintf("shim-%d-%d", os.Getpid(), seq.Add(1))
	if _, err := c.CreateTable(ctxFor(t), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = 20*time.Millisecond, time.Second })
	if err := w.Wait(ctxFor(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	return name
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: k}}
}

func put(t *testing.T, c *dynamodb.Client, tbl, k, v string) map[string]types.AttributeValue {
	t.Helper()
	it := map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: k}, "v": &types.AttributeValueMemberS{Value: v},
		"n": &types.AttributeValueMemberN{Value: "7"}, "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}}}
	if _, err := c.PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: it}); err != nil {
		t.Fatal(err)
	}
	return it
}

func get(t *testing.T, c *dynamodb.Client, tbl, k string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(ctxFor(t), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// failedItem returns the item a ConditionalCheckFailedException carried;
// it fails the test for any other error.
func failedItem(t *testing.T, what string, err error) map[string]types.AttributeValue {
	t.Helper()
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("%s: %v, want ConditionalCheckFailedException", what, err)
	}
	return ccf.Item
}

// The three writes, each with a condition that fails on an existing item.
func failingWrites(tbl, k string, rv types.ReturnValuesOnConditionCheckFailure) map[string]func(context.Context, *dynamodb.Client) error {
	cond := aws.String("attribute_not_exists(k)")
	return map[string]func(context.Context, *dynamodb.Client) error{
		"UpdateItem": func(ctx context.Context, c *dynamodb.Client) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key(k),
				UpdateExpression: aws.String("SET v = :x"), ConditionExpression: cond,
				ExpressionAttributeValues:           map[string]types.AttributeValue{":x": &types.AttributeValueMemberS{Value: "new"}},
				ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
		"PutItem": func(ctx context.Context, c *dynamodb.Client) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl),
				Item: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: k}}, ConditionExpression: cond,
				ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
		"DeleteItem": func(ctx context.Context, c *dynamodb.Client) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key(k), ConditionExpression: cond,
				ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
	}
}

// TestConditionFailureCarriesItem: through the shim, every write that
// fails its condition with ALL_OLD carries the stored item, parsed by the
// SDK into ConditionalCheckFailedException.Item and equal to what GetItem
// reads; without ALL_OLD, or on a key with no item, there is none — as in
// DynamoDB.
func TestConditionFailureCarriesItem(t *testing.T) {
	sh := startShim(t)
	c := client(t, sh.URL(), 1)
	tbl := table(t, c)
	want := put(t, c, tbl, "1", "old")
	for op, write := range failingWrites(tbl, "1", types.ReturnValuesOnConditionCheckFailureAllOld) {
		got := failedItem(t, op+" with ALL_OLD", write(ctxFor(t), c))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s with ALL_OLD: item %#v, want the stored %#v", op, got, want)
		}
	}
	for op, write := range failingWrites(tbl, "1", types.ReturnValuesOnConditionCheckFailureNone) {
		if got := failedItem(t, op+" without ALL_OLD", write(ctxFor(t), c)); got != nil {
			t.Errorf("%s without ALL_OLD: item %#v, want none", op, got)
		}
	}
	_, err := c.UpdateItem(ctxFor(t), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("2"),
		UpdateExpression: aws.String("SET v = :x"), ConditionExpression: aws.String("attribute_exists(k)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":x": &types.AttributeValueMemberS{Value: "new"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if got := failedItem(t, "update of an absent item", err); got != nil {
		t.Errorf("failed condition on an absent item: item %#v, want none", got)
	}
	if _, added := sh.Stats(); added != 3 {
		t.Errorf("Stats: %d items added, want 3", added)
	}
	if got := get(t, c, tbl, "1"); !reflect.DeepEqual(got, want) {
		t.Errorf("failed writes changed the item to %#v", got)
	}
}

// TestDynaliteOmitsItem is the difference the shim exists for: dynalite
// alone sends no item with a failed condition, even with ALL_OLD. If this
// ever fails, dynalite has learnt it and the shim's completion is moot.
func TestDynaliteOmitsItem(t *testing.T) {
	c := client(t, upstream(t), 1)
	tbl := table(t, c)
	put(t, c, tbl, "1", "old")
	for op, write := range failingWrites(tbl, "1", types.ReturnValuesOnConditionCheckFailureAllOld) {
		if got := failedItem(t, op, write(ctxFor(t), c)); got != nil {
			t.Errorf("dynalite's %s with ALL_OLD returned item %#v: it now does what the shim adds", op, got)
		}
	}
}

// TestDroppedReplyCommitted: a dropped reply is an SDK error (the
// connection closed) while the write is in the table; the next write is
// answered again.
func TestDroppedReplyCommitted(t *testing.T) {
	sh := startShim(t)
	c := client(t, sh.URL(), 1)
	tbl := table(t, c)
	sh.DropNextReplies(1)
	_, err := c.PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(tbl),
		Item: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "1"}, "v": &types.AttributeValueMemberS{Value: "x"}}})
	if err == nil {
		t.Fatal("PutItem with its reply dropped succeeded")
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		t.Fatalf("dropped reply: %v, want a transport error", err)
	}
	if it := get(t, c, tbl, "1"); it == nil {
		t.Fatal("the write whose reply was dropped is not in the table")
	}
	put(t, c, tbl, "2", "y")
	if dropped, _ := sh.Stats(); dropped != 1 {
		t.Fatalf("Stats: %d dropped, want 1", dropped)
	}
	// Reads never lose their reply.
	sh.DropNextReplies(1)
	get(t, c, tbl, "2")
	if _, err := c.DeleteItem(ctxFor(t), &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: key("2")}); err == nil {
		t.Fatal("DeleteItem after a read kept the drop: reply arrived")
	}
	if get(t, c, tbl, "2") != nil {
		t.Fatal("the delete whose reply was dropped did not commit")
	}
}

// TestDropProbability: p = 1 drops every write's reply, p = 0 none, and
// the same seed drops the same writes.
func TestDropProbability(t *testing.T) {
	sh := startShim(t)
	c := client(t, sh.URL(), 1)
	tbl := table(t, c)
	pattern := func(p float64, seed uint64) []bool {
		sh.SetDropProbability(p, seed)
		var out []bool
		for i := range 20 {
			_, err := c.PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(tbl),
				Item: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}})
			out = append(out, err != nil)
		}
		return out
	}
	for _, d := range pattern(1, 1) {
		if !d {
			t.Fatal("p = 1 answered a write")
		}
	}
	for _, d := range pattern(0, 1) {
		if d {
			t.Fatal("p = 0 dropped a write's reply")
		}
	}
	a, b := pattern(0.5, 42), pattern(0.5, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 dropped %v, then %v", a, b)
	}
	if dropped, _ := sh.Stats(); dropped != 20+2*count(a) {
		t.Fatalf("Stats: %d dropped, want %d", dropped, 20+2*count(a))
	}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
