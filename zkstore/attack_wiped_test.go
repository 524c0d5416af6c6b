package zkstore

// Attack: the store's path deleted by hand (or a restore to a copy taken
// before the path existed) under a running Store value. A deleted lease
// znode is a restore sign (doc.go), and the holder must get
// lease.ErrRestored or lease.ErrLost, never issue on; and the Store value
// should go on claiming (above its restore floor). ensureParents caches
// the parents it made (identity.made) and never makes them again.

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackPathWiped(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := attackPath("wiped")
	a := attackStore(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, n int, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	la, err := a.Claim(ctx, cr("a", 1, now))
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Everything under the path is deleted, children first.
	raw := attackDial(t, e)
	var del func(p string)
	del = func(p string) {
		kids, _, err := raw.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		for _, k := range kids {
			del(p + "/" + k)
		}
		if err := raw.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
	}
	del(path)

	_, err = a.Extend(ctx, la, now+20_000, 10*time.Second)
	t.Logf("A's renewal after the wipe: %v", err)
	if !errors.Is(err, lease.ErrRestored) && !errors.Is(err, lease.ErrLost) {
		t.Errorf("A's renewal on a deleted znode: %v, want ErrRestored or ErrLost", err)
	}
	var errs []error
	for range 3 {
		l, err := a.Claim(ctx, cr("a2", 2, now+1_000))
		if err == nil {
			t.Logf("held: A's store claims again after the wipe: machine %d start %d", l.Machine, l.StartMs)
			return
		}
		errs = append(errs, err)
	}
	t.Errorf("A's store can no longer claim after its path was wiped (3 tries): %v", errs)
}
