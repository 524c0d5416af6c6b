package etcdstore

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// beforeClaimKV wraps a client's KV and calls before just before each
// claim transaction (one that puts an owner key) is sent.
type beforeClaimKV struct {
	clientv3.KV
	before func()
}

func (k *beforeClaimKV) Txn(ctx context.Context) clientv3.Txn {
	return &beforeClaimTxn{Txn: k.KV.Txn(ctx), before: k.before}
}

type beforeClaimTxn struct {
	clientv3.Txn
	before func()
	claim  bool
}

func (t *beforeClaimTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *beforeClaimTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *beforeClaimTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.claim = t.claim || op.IsPut() && strings.Contains(string(op.KeyBytes()), "/"+kindOwner+"/")
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *beforeClaimTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.claim {
		t.before()
	}
	return t.Txn.Commit()
}

// TestClaimRacingARestoreIsMadeAgain: a restore noticed while a claim's
// transaction is in flight (here, just before it is sent) leaves the claim
// with a start below the restore window, written in its journal entry.
// The claim is given back, entry and all, and made again: the lease starts
// after the window, the journal holds one entry, the retried claim's, with
// that start, and only the retried claim's etcd lease is left.
func TestClaimRacingARestoreIsMadeAgain(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	cli.KV = &beforeClaimKV{KV: cli.KV, before: func() {
		if claims++; claims == 1 {
			s.noticeRestore(s.baseline().epoch, "test: a restore noticed while a claim was in flight", nil)
		}
	}}
	now := time.Now().UnixMilli()
	l, err := s.Claim(testCtx(t), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: now,
		LeaseFor: 10 * time.Second, MaxAhead: time.Second})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if claims != 2 {
		t.Errorf("claim transactions sent = %d, want 2 (the one that raced the restore, then the retry)", claims)
	}
	if floor := now + (MaxRestoreWindow - time.Second).Milliseconds(); l.StartMs < floor {
		t.Errorf("lease starts at %d, want at or above %d (the restore window after the moment noticed)", l.StartMs, floor)
	}
	h, err := s.History(testCtx(t), 0)
	if err != nil || len(h) != 1 || h[0].Token != l.Token || h[0].Claim != l.Claim || h[0].StartMs != l.StartMs {
		t.Fatalf("History = %+v, %v; want the retried claim's entry alone, token %d start %d", h, err, l.Token, l.StartMs)
	}
	if resp, err := cli.Leases(testCtx(t)); err != nil || len(resp.Leases) != 1 || claimID(resp.Leases[0].ID) != l.Claim {
		t.Errorf("etcd leases = %v, %v; want the retried claim's %s alone", resp.Leases, err, l.Claim)
	}
}
