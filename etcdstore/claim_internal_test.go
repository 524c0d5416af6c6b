package etcdstore

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTryClaimUndoesFarAhead: a claim that finds, at the number itself, a
// mark further ahead than MaxAhead (raised after the candidates were read)
// passes the number over: no owner key, no journal entry, no etcd lease
// left.
func TestTryClaimUndoesFarAhead(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	if _, err := s.RaiseMarks(testCtx(t), lease.Range{Lo: 0, Hi: 0}, now+time.Hour.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	r := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: now, LeaseFor: 10 * time.Second, MaxAhead: time.Second}
	l, why, err := s.tryClaim(testCtx(t), r, 0, &scheduleGuard{}, &scheduleGuard{})
	if l != nil || err != nil || why != skipAhead {
		t.Fatalf("tryClaim = %v, %v, %v; want nil, skipAhead, nil", l, why, err)
	}
	if resp, err := cli.Get(testCtx(t), s.keys.owner(0)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("owner key after undo: %v, %v; want none", resp.Kvs, err)
	}
	if resp, err := cli.Leases(testCtx(t)); err != nil || len(resp.Leases) != 0 {
		t.Errorf("etcd leases after undo: %v, %v; want none", resp.Leases, err)
	}
	if h, err := s.History(testCtx(t), 0); err != nil || len(h) != 0 {
		t.Errorf("journal after the pass-over: %+v, %v; want none", h, err)
	}
}

// TestAdoptDecidesFromTheStore: after a claim transaction errs, adopt takes
// the claim if the owner key is bound to the claim's etcd lease, and
// otherwise revokes that lease and fails.
func TestAdoptDecidesFromTheStore(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := lease.ClaimRequest{Holder: "h", NowMs: time.Now().UnixMilli()}
	cause := errors.New("context deadline exceeded")

	// The transaction committed before the error reached us.
	committed, err := cli.Grant(testCtx(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	put, err := cli.Txn(testCtx(t)).Then( // what the claim transaction writes
		clientv3.OpPut(s.keys.owner(1), encode(ownerValue{Holder: "h"}), clientv3.WithLease(committed.ID)),
		clientv3.OpPut(s.keys.entry(1, claimID(committed.ID)), encode(entryValue{Holder: "h"})),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	token, err := s.adopt(testCtx(t), r, 1, committed.ID, cause)
	if err != nil || token != uint64(put.Header.Revision) {
		t.Errorf("adopt of a committed claim = %d, %v; want token %d", token, err, put.Header.Revision)
	}

	// It did not commit: someone else holds the number.
	lost, err := cli.Grant(testCtx(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.adopt(testCtx(t), r, 1, lost.ID, cause); !errors.Is(err, cause) {
		t.Errorf("adopt of a claim that did not commit = %v, want the cause", err)
	}
	if ttl, err := cli.TimeToLive(testCtx(t), lost.ID); err != nil || ttl.TTL != -1 {
		t.Errorf("etcd lease of the failed claim: TTL %v, %v; want revoked (-1)", ttl.TTL, err)
	}
}

// TestTooFarCenturiesAhead: a mark in the year 2500 (an operator's typo
// in raise-marks, say) is 530 years ahead, which overflows a
// time.Duration counted in nanoseconds; compared in milliseconds it is
// simply too far, and the number is passed over instead of claimed with a
// start five centuries away.
func TestTooFarCenturiesAhead(t *testing.T) {
	t.Parallel()
	far := time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	now := time.Now().UnixMilli()
	r := lease.ClaimRequest{NowMs: now, MaxAhead: time.Hour}
	if !tooFar(far, r) {
		t.Errorf("tooFar(year 2500, now, MaxAhead 1h) = false, want true")
	}
	if tooFar(now+time.Hour.Milliseconds(), r) || !tooFar(now+time.Hour.Milliseconds()+1, r) {
		t.Errorf("tooFar at MaxAhead's edge: want false at exactly 1h ahead, true 1 ms further")
	}

	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RaiseMarks(testCtx(t), lease.Range{Lo: 0, Hi: 0}, far); err != nil {
		t.Fatal(err)
	}
	req := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: now, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	if l, err := s.Claim(testCtx(t), req); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim of the only number, its mark in 2500: %v, %v; want ErrNoFreeNumber", l, err)
	}
}
