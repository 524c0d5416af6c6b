package dynamostore_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// beforeUpdate is an HTTP client that runs hook once, armed, before the
// first UpdateItem it sends: between a claim's scan and its write.
type beforeUpdate struct {
	armed atomic.Bool
	hook  func()
}

func (c *beforeUpdate) Do(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") && c.armed.CompareAndSwap(true, false) {
		c.hook()
	}
	return http.DefaultClient.Do(r)
}

// TestClaimRereadsRegistry: a region registry recording another fleet
// schedule than the table's record, written between a claim's scan (which
// found them agreeing) and its write, is seen when the store reads both
// again after the write: the claim is refused with lease.ErrSchedule and
// given back, so the number is free again and no lease is handed out.
// DynamoDB cannot condition the claim on the registry's item (no
// transactions here: dynalite has none); the read after the write is what
// makes the claim's answer hold at an instant after it committed.
func TestClaimRereadsRegistry(t *testing.T) {
	t.Parallel()
	const record, recorded = "v1,v2@2036-01-01T00:00:00Z", "v1,v2@2037-01-01T00:00:00Z"
	s := newStore(t)
	if _, err := s.SetFleetSchedule(ctxFor(t), 0, record); err != nil {
		t.Fatal(err)
	}
	agrees := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "a", Number: 0, CreatedMs: 1}}, Schedule: record}
	if err := s.SetRegistry(ctxFor(t), agrees); err != nil {
		t.Fatal(err)
	}
	differs, err := agrees.WithSchedule(recorded)
	if err != nil {
		t.Fatal(err)
	}
	hc := &beforeUpdate{hook: func() {
		if err := s.SetRegistry(ctxFor(t), differs); err != nil {
			t.Errorf("SetRegistry between the claim's scan and its write: %v", err)
		}
	}}
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(shimEndpoint(t)), HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	hooked, err := dynamostore.New(client, dynamostore.Config{Table: s.Table(), RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hc.armed.Store(true)
	l, err := hooked.Claim(ctxFor(t), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: baseMs(),
		LeaseFor: 10 * time.Second, MaxAhead: time.Second, Schedule: record})
	if hc.armed.Load() {
		t.Fatal("the claim sent no UpdateItem")
	}
	if err == nil || !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+recorded+"'") {
		t.Fatalf("Claim with the registry coming to record %s during it, the record %s: %v, %v; want ErrSchedule naming snowfence schedule set '%s'",
			recorded, record, l, err, recorded)
	}
	if rec, err := s.Get(ctxFor(t), 0); err != nil || rec.Held() {
		t.Errorf("machine 0 after the refused claim: %+v, %v; want it given back", rec, err)
	}
}
