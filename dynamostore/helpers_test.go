package dynamostore_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// The tests run against a real DynamoDB API: dynalite, started by
// scripts/services/dynalite.sh, at the endpoint in this variable.
const endpointEnv = "SNOWFENCE_TEST_DYNAMODB_ENDPOINT"

func endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(endpointEnv)
	if ep == "" {
		testenv.Missing(t, endpointEnv+" is not set: run `export "+endpointEnv+"=$(scripts/services/dynalite.sh start)` (needs Node.js and npm), or scripts/test")
	}
	return ep
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var tableSeq atomic.Int64

var unsafeTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// tableFor names a table of the test's own.
func tableFor(t testing.TB) string {
	name := unsafeTableChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 180 {
		name = name[:180]
	}
	return fmt.Sprintf("t-%s-%d-%d", name, os.Getpid(), tableSeq.Add(1))
}

var (
	sharedShimOnce sync.Once
	sharedShim     *dynashim.Shim
	sharedShimErr  error
)

// shimEndpoint is the endpoint the store tests use: one dynashim in front
// of dynalite for the whole test binary, so that, as on DynamoDB, a failed
// condition with ALL_OLD carries the item (dynalite alone omits it; see
// TestDynaliteAloneOmitsItem). Tests that drop replies start a shim of
// their own (newShim).
func shimEndpoint(t testing.TB) string {
	t.Helper()
	ep := endpoint(t)
	sharedShimOnce.Do(func() { sharedShim, sharedShimErr = dynashim.Start(ep) })
	if sharedShimErr != nil {
		t.Fatal(sharedShimErr)
	}
	return sharedShim.URL()
}

// newShim starts a shim of the test's own in front of dynalite.
func newShim(t testing.TB) *dynashim.Shim {
	t.Helper()
	sh, err := dynashim.Start(endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	return sh
}

// connect returns a store through the shared shim for table (which it does
// not create).
func connect(t testing.TB, table string, region int) *dynamostore.Store {
	t.Helper()
	return connectAt(t, shimEndpoint(t), table, dynamostore.Config{Region: region})
}

// connectAt returns a store on endpoint ep with cfg (Table set to table, a
// 2 s RequestTimeout unless cfg has one).
func connectAt(t testing.TB, ep, table string, cfg dynamostore.Config) *dynamostore.Store {
	t.Helper()
	cfg.Table = table
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	s, err := dynamostore.Connect(ctxFor(t), dynamostore.ClientConfig{
		Endpoint: ep, AWSRegion: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test",
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newStore creates a table of the test's own and returns a store on it.
func newStore(t testing.TB) *dynamostore.Store {
	t.Helper()
	s := connect(t, tableFor(t), 0)
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func baseMs() int64 { return time.Now().UnixMilli() }

// req builds a claim request for a range with generous limits.
func req(holder string, lo, hi int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{
		Holder:   holder,
		Range:    lease.Range{Lo: lo, Hi: hi},
		NowMs:    nowMs,
		LeaseFor: 10 * time.Second,
		MaxAhead: time.Hour,
	}
}

// mustExtend extends l to markMs for a 10 s lease (leasetest.MustExtend).
func mustExtend(t testing.TB, s lease.Store, l *lease.Lease, markMs int64) *lease.Lease {
	t.Helper()
	return leasetest.MustExtend(t, s, l, markMs, 10*time.Second)
}

// copyAside copies every item of s's lease table and of its journal table
// aside and returns a function that writes them back in place of the items
// there then — deleting the items the copy does not have — as putting back
// a copy of dynalite's data does: the same tables with the same TableIds,
// older items. (A point-in-time restore makes a new table: restoreTable.)
func copyAside(t testing.TB, s *dynamostore.Store) (put func()) {
	t.Helper()
	type table struct {
		name  string
		keys  []string
		items []map[string]types.AttributeValue
	}
	scan := func(name string) []map[string]types.AttributeValue {
		var items []map[string]types.AttributeValue
		p := dynamodb.NewScanPaginator(s.Client(), &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctxFor(t))
			if err != nil {
				t.Fatalf("scan %s: %v", name, err)
			}
			items = append(items, out.Items...)
		}
		return items
	}
	tables := []*table{{name: s.Table(), keys: []string{"machine_id"}}, {name: s.JournalTable(), keys: []string{"pk", "n"}}}
	for _, tb := range tables {
		tb.items = scan(tb.name)
	}
	return func() {
		t.Helper()
		for _, tb := range tables {
			for _, it := range scan(tb.name) {
				key := map[string]types.AttributeValue{}
				for _, k := range tb.keys {
					key[k] = it[k]
				}
				if _, err := s.Client().DeleteItem(ctxFor(t), &dynamodb.DeleteItemInput{TableName: aws.String(tb.name), Key: key}); err != nil {
					t.Fatalf("delete from %s: %v", tb.name, err)
				}
			}
			for _, it := range tb.items {
				if _, err := s.Client().PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(tb.name), Item: it}); err != nil {
					t.Fatalf("put back into %s: %v", tb.name, err)
				}
			}
		}
	}
}
