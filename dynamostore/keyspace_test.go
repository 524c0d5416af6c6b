package dynamostore_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestKeyspaceItems: a sibling's items are machine_id index×1024 +
// number, and it is checked as New checks a region: MaxRegion or more is
// ErrInvalid, like a negative index.
func TestKeyspaceItems(t *testing.T) {
	s := newStore(t)
	idx, _ := lease.KeyspaceOf(1, 2)
	sib, err := s.Keyspace(idx)
	if err != nil {
		t.Fatalf("Keyspace(%d): %v", idx, err)
	}
	defer sib.Close()
	if got := sib.(*dynamostore.Store).Region(); got != idx {
		t.Errorf("Region() of Keyspace(%d) = %d", idx, got)
	}
	leasetest.MustClaim(t, sib, req("a", 4, 4, baseMs()))
	for id, want := range map[int]bool{idx*dynamostore.Machines + 4: true, 4: false, 2*dynamostore.Machines + 4: false} {
		out, err := s.Client().GetItem(ctxFor(t), &dynamodb.GetItemInput{TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: strconv.Itoa(id)}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(out.Item) > 0; got != want {
			t.Errorf("item at machine_id %d: present %v, want %v", id, got, want)
		}
	}
	for _, bad := range []int{-1, dynamostore.MaxRegion, dynamostore.MaxRegion + idx} {
		if _, err := s.Keyspace(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Keyspace(%d): %v, want ErrInvalid", bad, err)
		}
	}
	top, err := s.Keyspace(dynamostore.MaxRegion - 1)
	if err != nil {
		t.Fatalf("Keyspace(MaxRegion-1): %v", err)
	}
	defer top.Close()
	leasetest.MustClaim(t, top, req("top", dynamostore.Machines-1, dynamostore.Machines-1, baseMs()))
	// The last keyspace's last number is below the table's own items and
	// every other keyspace's.
	if recs, err := s.List(ctxFor(t)); err != nil || len(recs) != 0 {
		t.Errorf("List of region 0 = %v, %v; want no records", recs, err)
	}
}

// TestKeyspaceSharesIdentity: the table's TableId is the table's, so a
// restore noticed through the store fences the lease its sibling claimed
// before it, even with IdentityEvery negative (no Extend compares the
// TableId: only Claim does, and the sibling claims nothing after).
func TestKeyspaceSharesIdentity(t *testing.T) {
	table := tableFor(t)
	s := connectAt(t, shimEndpoint(t), table, dynamostore.Config{IdentityEvery: -1})
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	sib, err := s.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer sib.Close()
	now := baseMs()
	a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 5, 5, now)), now+20_000)
	b := mustExtend(t, sib, leasetest.MustClaim(t, sib, req("b", 5, 5, now)), now+20_000)
	restoreTable(t, s, backup(t, s))
	// Only a claim compares the TableId; the store's notices.
	r := req("c", 6, 6, now+1000)
	r.RestoreWindow = time.Minute
	l := leasetest.MustClaim(t, s, r)
	if l.StartMs < now+1000+time.Minute.Milliseconds() {
		t.Errorf("claim after the restore starts at %d, want ≥ %d", l.StartMs, now+1000+time.Minute.Milliseconds())
	}
	if _, err := s.Extend(ctxFor(t), a, now+25_000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("store's Extend of a lease claimed before the restore: %v, want ErrRestored", err)
	}
	if _, err := sib.Extend(ctxFor(t), b, now+25_000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("sibling's Extend of a lease claimed before the restore the store noticed: %v, want ErrRestored", err)
	}
	mustExtend(t, s, l, l.StartMs+1000) // leases claimed after it work
}
