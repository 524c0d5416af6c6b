//go:build linux

package dynamostore_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/internal/testkit/soaktest"
	"github.com/snowfence/snowfence/lease"
)

// Child holder processes for the soak: the parent re-executes this test
// binary with soakChildEnv set to a JSON soakConfig, and TestSoakChild
// runs keepers and generators on the table, sending one flushed frame per
// event as internal/testkit/soaktest describes; its request counts (Out.Counts, a
// stats frame) are
//
//	stats 0 <n> <ms>           DynamoDB requests sent so far, in ms of life
const soakChildEnv = "SNOWFENCE_DYNAMO_SOAK_CHILD"

type soakConfig struct {
	Endpoint, Table string
	soaktest.HolderSpec
}

// countingClient counts the HTTP requests the SDK sends (retries included).
type countingClient struct {
	n atomic.Int64
	c *http.Client
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.c.Do(r)
}

// TestSoakChild is not a test: it is the body of a soak child process, and
// skips unless TestSoakKilledHoldersNeverDuplicate started it.
func TestSoakChild(t *testing.T) {
	soaktest.ChildMain(t, soakChildEnv, "TestSoakKilledHoldersNeverDuplicate", func(ctx context.Context, cfg soakConfig, out *soaktest.Out) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		hc := &countingClient{c: &http.Client{}}
		awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
		if err != nil {
			out.Fatal(err)
			return
		}
		client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
			o.BaseEndpoint, o.HTTPClient = aws.String(cfg.Endpoint), hc
		})
		s, err := dynamostore.New(client, dynamostore.Config{Table: cfg.Table, RequestTimeout: time.Second, TestBound: testbound.Of(cfg.SelfFence)})
		if err != nil {
			out.Fatal(err)
			return
		}
		born := time.Now()
		stop := soaktest.Reporter(ctx, out, cfg.HolderSpec, 200*time.Millisecond, func() []int64 {
			return []int64{hc.n.Load(), time.Since(born).Milliseconds()}
		})
		soaktest.RunHolders(ctx, cfg.HolderSpec, s, out)
		cancel()
		stop()
	})
}

// TestSoakKilledHoldersNeverDuplicate runs 8 child processes of 2 holders
// each on machine numbers 0–11 of one table, minting continuously, while the
// parent SIGKILLs a random process every 0.3–1.5 s and starts a fresh one in
// its place. No ID may be sent twice, no two holders may stamp the same
// millisecond on one number, and each holder's IDs must strictly increase.
// It logs the DynamoDB request rate per holder.
//
// SNOWFENCE_SOAK_SEED replays a kill schedule; the seed is logged.
func TestSoakKilledHoldersNeverDuplicate(t *testing.T) {
	ep := shimEndpoint(t)
	const procs, perProc = 8, 2
	dur := 15 * time.Second
	if testing.Short() {
		dur = 4 * time.Second
	}
	// The first children issue only after the store's notice window: every
	// child's store bounds the table's self-fence at the holders' own
	// (Config.TestBound), as a test fleet on short timings may.
	const selfFence = 1200 * time.Millisecond
	warm := lease.NoticeWindow(selfFence) + 10*time.Second // slack for claims on a loaded machine
	s := newStore(t)
	cfg := soakConfig{Endpoint: ep, Table: s.Table(), HolderSpec: soaktest.HolderSpec{Range: lease.Range{Lo: 0, Hi: 11},
		Holders: perProc, Batch: 10, Every: 10 * time.Millisecond, Lifetime: warm + dur + 30*time.Second,
		LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: selfFence}}
	res := soaktest.Soak{Name: "dynamostore soak", Procs: procs, Warmup: warm, Duration: dur, MinHolders: procs,
		Child: soaktest.Child{Test: "TestSoakChild", Env: soakChildEnv, Config: cfg}}.Run(t)

	var nreq, ms int64
	for _, v := range res.Reports {
		if len(v) != 2 {
			continue
		}
		nreq += v[0]
		ms += v[1]
	}
	perHolder := 0.0
	if ms > 0 {
		perHolder = float64(nreq) / (float64(ms) / 1000) / perProc
	}
	t.Logf("dynamostore soak: %d DynamoDB requests, %.1f per second per holder (lease 3 s, renewal every 0.5 s)", nreq, perHolder)
}
