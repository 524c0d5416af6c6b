package zkstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// TestClaimChildDeletedByHand: a claim's child znode deleted by hand (the
// record still the holder's) leaves no write that can prove the claim:
// the holder's renewal and release get lease.ErrLost naming the child, a
// claimer passes the number over, and creating the child again (empty)
// lets the number be claimed once its lease ran out.
func TestClaimChildDeletedByHand(t *testing.T) {
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/child%d/gone-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	raw := attackDial(t, e)
	a, err := New(raw, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 3, Hi: 3}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	la, err := a.Claim(ctx, cr("a", now))
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	child := a.childPath(3, la.Claim)
	if err := raw.Delete(child, -1); err != nil {
		t.Fatalf("delete %s: %v", child, err)
	}
	_, err = a.Extend(ctx, la, now+20_000, 10*time.Second)
	if !errors.Is(err, lease.ErrLost) || !strings.Contains(err.Error(), child) {
		t.Fatalf("renewal with its claim's child gone: %v, want ErrLost naming %s", err, child)
	}
	if err := a.Release(ctx, la, now+5_000); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release with its claim's child gone: %v, want ErrLost", err)
	}
	b, err := New(raw, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, cr("b", now+10_001)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("claim of a number whose claim child is gone: %v, want ErrNoFreeNumber", err)
	}
	if _, err := raw.Create(child, nil, 0, b.acl()); err != nil {
		t.Fatalf("create %s again: %v", child, err)
	}
	lb, err := b.Claim(ctx, cr("b", now+10_002))
	if err != nil {
		t.Fatalf("claim once the child is made again: %v", err)
	}
	if lb.StartMs < now+10_000 {
		t.Errorf("B starts at %d, below A's acknowledged mark %d", lb.StartMs, now+10_000)
	}
}
