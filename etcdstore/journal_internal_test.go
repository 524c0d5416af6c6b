package etcdstore

import (
	"context"
	"encoding/json"
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

// TestClaimPreReadMarkAcrossRestore: a claim whose mark was read before its
// transaction never starts below a mark written in a restored history that
// reused the read's revision. The journal moved the claim's
// read of the mark out of the claim transaction. tryClaim now reads the
// mark first, computes StartMs from that read, and the transaction only
// compares the mark key's mod revision with the one read. A mod revision
// names one write only within one etcd history: after a restore without a
// (large enough) --bump-revision, the revisions are handed out again. Before
// the journal, the claim transaction read the mark itself, so its start was
// above the mark in force when it committed, whatever the history.
//
// The interleaving, with the runbook followed: the claimer X reads the
// range and then the mark of number 0 (mark M, mod revision r, the newest
// revision), and pauses before its claim transaction. etcd is restored from
// a snapshot older than r; the operator raises the marks (RaiseMarks) above
// everything issued; a holder Y claims number 0 above the raised mark,
// renews, and releases at its mark M' > M — and that release happens to be
// revision r of the new history. X's transaction then commits: the mark key
// has mod revision r, no journal key is newer than r, no owner, no
// quarantine. X's lease starts at max(M, NowMs) < M': X and Y both issue
// the timestamps in [max(M, NowMs), M') on number 0. X does not notice the
// restore either: the revision it sees rises from r to r+1, the cluster ID
// and the raft term are unchanged. Its renewals then pass too (they compare
// on the same mod revision r).
//
// Before the fix X's lease started below Y's released mark: duplicate IDs
// (an adversarial review of the journal found it).
func TestClaimPreReadMarkAcrossRestore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	const n = 0
	rng := lease.Range{Lo: n, Hi: n}
	now := time.Now().UnixMilli()
	claimReq := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: rng, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Minute}
	}
	rev := func(cli *clientv3.Client) int64 {
		resp, err := cli.Get(testCtx(t), "/pad")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	padTo := func(cli *clientv3.Client, r int64) {
		for rev(cli) < r {
			if _, err := cli.Put(testCtx(t), "/pad", "x"); err != nil {
				t.Fatal(err)
			}
		}
		if got := rev(cli); got != r {
			t.Fatalf("padding: revision %d, want %d", got, r)
		}
	}

	// The old history: a snapshot, some unrelated writes, then a holder of
	// number 0 that releases at M; the release is the newest revision, r.
	cli0 := c.Client(t)
	snap := c.Snapshot(t)
	padTo(cli0, rev(cli0)+20)
	s0, err := New(cli0, Config{})
	if err != nil {
		t.Fatal(err)
	}
	l0, err := s0.Claim(testCtx(t), claimReq("old", now))
	if err != nil {
		t.Fatal(err)
	}
	markM := now + 1000
	if l0, err = s0.Extend(testCtx(t), l0, markM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s0.Release(testCtx(t), l0, markM); err != nil {
		t.Fatal(err)
	}
	r := rev(cli0)

	// X: the claim is paused after its read of the mark, before its grant; meanwhile etcd is
	// restored, marks raised, and Y holds and releases number 0, its release
	// landing on revision r.
	cliX := c.Client(t)
	sX, err := New(cliX, Config{})
	if err != nil {
		t.Fatal(err)
	}
	raised := now + 2000
	var yMark int64
	fired := false
	cliX.Lease = &beforeGrantLease{Lease: cliX.Lease, before: func() {
		if fired {
			return
		}
		fired = true
		c.Restore(t, snap, etcdtest.RestoreOptions{})
		cliY := c.Client(t)
		sY, err := New(cliY, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sY.RaiseMarks(testCtx(t), rng, raised); err != nil { // the runbook's step
			t.Fatal(err)
		}
		ly, err := sY.Claim(testCtx(t), claimReq("y", now))
		if err != nil {
			t.Fatal(err)
		}
		yMark = ly.StartMs + 3000
		if ly, err = sY.Extend(testCtx(t), ly, yMark, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		padTo(cliY, r-1)
		if err := sY.Release(testCtx(t), ly, yMark); err != nil {
			t.Fatal(err)
		}
		mk, err := cliY.Get(testCtx(t), sY.keys.mark(n))
		if err != nil || len(mk.Kvs) != 1 || mk.Kvs[0].ModRevision != r {
			t.Fatalf("set-up: Y's release did not land on revision %d: %v %v", r, mk, err)
		}
	}}
	lx, err := sX.Claim(testCtx(t), claimReq("x", now))
	if err != nil {
		t.Fatalf("X's claim: %v", err)
	}
	if !fired {
		t.Fatal("set-up: the restore was not made during X's claim")
	}
	mk, err := cliX.Get(testCtx(t), sX.keys.mark(n))
	if err != nil || len(mk.Kvs) != 1 {
		t.Fatalf("read the mark: %v %v", mk, err)
	}
	var mv markValue
	_ = json.Unmarshal(mk.Kvs[0].Value, &mv)
	t.Logf("X's lease: start %d mark %d; stored mark when it committed %d (Y issued up to %d); X's pre-read mark %d", lx.StartMs, lx.MarkMs, mv.MarkMs, yMark, markM)
	if lx.StartMs < yMark {
		_, extErr := sX.Extend(testCtx(t), lx, yMark+1000, 10*time.Second)
		t.Errorf("X's lease starts at %d, below %d, the mark Y released at (Y issued up to it): both may issue [%d, %d) on number %d "+
			"(X's renewal past it: err %v)", lx.StartMs, yMark, lx.StartMs, yMark, n, extErr)
	}
}

// beforeGrantLease wraps a client's Lease and calls before just before each
// Grant is sent.
type beforeGrantLease struct {
	clientv3.Lease
	before func()
}

func (l *beforeGrantLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	l.before()
	return l.Lease.Grant(ctx, ttl)
}
