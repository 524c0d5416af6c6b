package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// followUpStore is a stubStore whose renewals, while the store is
// unreachable (down), fail as dynamostore's do: the write fails, and the
// store re-reads the item to decide, on a context of its own bounded by the
// store's own request timeout (dynamostore.Store.reread:
// context.WithTimeout(context.Background(), cfg.RequestTimeout), 5 s by
// default), not by the keeper's RequestTimeout. pgstore's and etcdstore's
// adopt after a claim of unknown outcome do the same (a fixed 5 s; the
// etcd store's own RequestTimeout, 5 s, twice: the re-read and the
// revoke). An unreachable table makes that re-read last its whole timeout.
// Nothing hangs: every call returns within the store's own bound, and the
// outage clears on its own.
type followUpStore struct {
	*stubStore
	clk  *fakeclock.Clock
	own  time.Duration // the store's own request timeout
	down atomic.Bool
}

func (s *followUpStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if !s.down.Load() {
		return s.stubStore.Extend(ctx, l, markMs, leaseFor)
	}
	// The write failed (connection reset): the outcome is unknown, so the
	// store re-reads on a context of its own, which the unreachable table
	// lets run out.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	_ = s.clk.Sleep(rctx, s.own)
	return nil, errors.New("renew: connection reset; the outcome is unknown (and reading the item to decide failed: context deadline exceeded): retry")
}

func (s *followUpStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	if s.down.Load() {
		return lease.Record{}, errors.New("get: connection refused")
	}
	return s.stubStore.Get(ctx, machine)
}

// ATTACK (livez): StallAfter assumes every store call returns within the
// keeper's RequestTimeout (six of them per step), but the stores bound the
// follow-ups they make on their own after an error with their own timeout
// (5 s by default), which `snowfence serve` never ties to the keeper's
// (RequestTimeout = RenewEvery/2). With --renew-every 500ms (allowed: any
// RenewEvery below SelfFence is), StallAfter is 2 × (0.5 s + 6 × 0.25 s) =
// 4 s, while every renewal through a dynamodb outage takes 5 s: Stalled
// reports the loop wedged — /livez answers 503 and the orchestrator
// restarts a holder whose outage would have cleared on its own, costing a
// claim's notice window (4 min 36 s at the table timings).
func TestAttackStalledByStoreOwnFollowUpTimeout(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &followUpStore{stubStore: &stubStore{machine: 5}, clk: clk, own: 5 * time.Second}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		RenewEvery: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	// Before Close (cleanups run last first): end the outage and let the
	// store's follow-up in flight run out, or Close waits for it.
	t.Cleanup(func() { st.down.Store(false); clk.AutoAdvance(true); clk.Advance(st.own) })
	if err := k.Claimed(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("StallAfter = %s", k.StallAfter())
	st.down.Store(true)
	advanceNotStalled(t, k, clk, 3*st.own, 100*time.Millisecond,
		fmt.Sprintf("a store outage whose every call returns within the store's own timeout (%s)", st.own))
	if s := k.Status(); s.RenewFailures == 0 {
		t.Errorf("Status = %+v; want renewal failures (the outage was not seen)", s)
	}
}

// adoptStore is a stubStore whose first claim fails as etcdstore's does
// when the cluster becomes unreachable between the claim's read and its
// transaction: the transaction's outcome is unknown, so the store re-reads
// (adopt) and then revokes the claim's etcd lease, each on a context of its
// own bounded by the store's own RequestTimeout (etcdstore.Store.detached,
// 5 s by default, which serve never sets). Later claims fail at once (the
// read fails first).
type adoptStore struct {
	*stubStore
	clk     *fakeclock.Clock
	own     time.Duration
	adopted atomic.Bool
}

func (s *adoptStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if !s.adopted.Swap(true) {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		_ = s.clk.Sleep(rctx, 2*s.own) // the re-read, then the revoke, each running out
		return nil, errors.New("etcdstore: claim machine 5: context deadline exceeded; re-reading it failed too, so its etcd lease was revoked; retry")
	}
	return nil, errors.New("etcdstore: claim in 5-5: read the range: context deadline exceeded; retry")
}

// ATTACK (livez), the same at the default store, etcd, with --renew-every
// 1s: StallAfter is 2 × (1 s + 6 × 0.5 s) = 8 s, and a claim caught by the
// start of an outage takes 0.5 s + 5 s + 5 s. Stalled says wedged for the
// last 2.5 s of it.
func TestAttackStalledByEtcdClaimAdopt(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &adoptStore{stubStore: &stubStore{machine: 5}, clk: clk, own: 5 * time.Second}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		RenewEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	t.Cleanup(func() { clk.AutoAdvance(true); clk.Advance(2 * st.own) })
	t.Logf("StallAfter = %s", k.StallAfter())
	advanceNotStalled(t, k, clk, 3*st.own, 100*time.Millisecond,
		fmt.Sprintf("an outage that caught a claim (its store's follow-ups each run out their own %s)", st.own))
}
