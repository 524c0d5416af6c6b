package dynamostore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
)

// TestRegistryItemBesideLeases: the region registry's item (machine_id
// -3) shares the table with every region's leases without being one:
// List, RaiseMarks over the region's first numbers and claims over the
// whole range never see or touch it, and the store of another region
// reads the same registry.
func TestRegistryItemBesideLeases(t *testing.T) {
	s := newStore(t)
	s1 := connect(t, s.Table(), 1)
	// The two regions' stores are one copy (one identity): named as two,
	// they are refused.
	if _, err := registry.AddRegion(ctxFor(t), []registry.Copy{{Name: "copy-s", Store: s}, {Name: "copy-s1", Store: s1}}, "eu-west-1", baseMs(), 8); !errors.Is(err, registry.ErrCopyIdentity) {
		t.Fatalf("AddRegion on two regions of one table as two copies = %v; want ErrCopyIdentity", err)
	}
	g, err := registry.AddRegion(ctxFor(t), []registry.Copy{{Name: "copy-s", Store: s}}, "eu-west-1", baseMs(), 8)
	if err != nil || g.Number != 0 {
		t.Fatalf("AddRegion on region 0 of the table = %+v, %v; want number 0", g, err)
	}
	want, err := s.Registry(ctxFor(t))
	if err != nil || want.Version != 1 {
		t.Fatalf("Registry = %+v, %v; want version 1", want, err)
	}
	now := baseMs()
	leasetest.MustClaim(t, s1, req("a", 0, 1023, now))
	for _, st := range []lease.Admin{s, s1} {
		recs, err := st.List(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Machine < 0 || rec.Machine >= 1024 {
				t.Fatalf("List shows %+v", rec)
			}
		}
		if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 15}, now+1000); err != nil || n < 16 {
			t.Fatalf("RaiseMarks over 0-15 = %d, %v; want all 16 numbers", n, err)
		}
	}
	if r, err := s1.Registry(ctxFor(t)); err != nil || !r.Equal(want) {
		t.Fatalf("registry after List, claims and RaiseMarks: %+v, %v; want %+v", r, err, want)
	}
}

// TestRegistryItemByHand: a registry item that does not hold a registry
// is an error that says what to do, never an empty registry.
func TestRegistryItemByHand(t *testing.T) {
	s := newStore(t)
	for name, item := range map[string]map[string]types.AttributeValue{
		"no body":        {"version": &types.AttributeValueMemberN{Value: "1"}},
		"not JSON":       {"version": &types.AttributeValueMemberN{Value: "1"}, "body": &types.AttributeValueMemberS{Value: "eu-west-1=0"}},
		"other version":  {"version": &types.AttributeValueMemberN{Value: "2"}, "body": &types.AttributeValueMemberS{Value: `{"version":1,"regions":[{"name":"a","number":0}]}`}},
		"body of a list": {"version": &types.AttributeValueMemberN{Value: "1"}, "body": &types.AttributeValueMemberS{Value: `[]`}},
	} {
		item["machine_id"] = &types.AttributeValueMemberN{Value: "-3"}
		if _, err := s.Client().PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: item}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Registry(ctxFor(t))
		if err == nil || !strings.Contains(err.Error(), "put back") {
			t.Fatalf("Registry with the item %s = %+v, %v; want an error saying what to do", name, r, err)
		}
		t.Logf("%s: %v", name, err)
		if _, err := registry.AddRegion(ctxFor(t), []registry.Copy{{Name: "copy-s", Store: s}}, "us-east-1", baseMs(), 8); err == nil {
			t.Fatalf("AddRegion over the item %s succeeded; want the read's error", name)
		}
	}
}

// TestRegistryRetryWithoutOldItem: on dynalite alone, which returns no
// item with a failed condition, the store reads the item to tell a retry
// (success) from a conflict.
func TestRegistryRetryWithoutOldItem(t *testing.T) {
	s := newStore(t)
	bare := connectAt(t, endpoint(t), s.Table(), dynamostore.Config{})
	v1, _, _ := registry.Registry{}.WithRegion("eu-west-1", baseMs(), 8)
	if err := bare.SetRegistry(ctxFor(t), v1); err != nil {
		t.Fatal(err)
	}
	if err := bare.SetRegistry(ctxFor(t), v1); err != nil {
		t.Errorf("SetRegistry of the stored registry again, on dynalite alone: %v; want nil", err)
	}
	rival, _, _ := registry.Registry{}.WithRegion("us-east-1", baseMs(), 8)
	if err := bare.SetRegistry(ctxFor(t), rival); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("SetRegistry of another version 1, on dynalite alone: %v; want registry.ErrConflict", err)
	}
}
