package zkstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestAdminWritesNeedTheClaimChild: the operator's writes on a record
// follow the claim child's rules as the holder's do. With the held
// record's child deleted by hand, Quarantine and RaiseMarks cannot prove
// the claim they read and fail naming the child, changing nothing; made
// again (empty), the quarantine goes through, and its own claim's child
// replaces the holder's, so the holder's renewal gets ErrQuarantined.
func TestAdminWritesNeedTheClaimChild(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	st := open(t, e, path)
	raw := dial(t, e)
	ctx := t.Context()
	nowMs := time.Now().UnixMilli()
	l := mustClaim(t, st, req("h", 3, 3, nowMs))
	child := fmt.Sprintf("%s/leases/0/3/c-%s", path, l.Claim)
	if err := raw.Delete(child, -1); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(ctx, 3); err == nil || !strings.Contains(err.Error(), child) {
		t.Errorf("Quarantine with the claim's child gone: %v; want an error naming %s", err, child)
	}
	if n, err := st.RaiseMarks(ctx, lease.Range{Lo: 3, Hi: 3}, nowMs+60_000); err == nil || n != 0 || !strings.Contains(err.Error(), child) {
		t.Errorf("RaiseMarks with the claim's child gone = %d, %v; want 0 and an error naming %s", n, err, child)
	}
	if rec := leasetest.MustGet(t, st, 3); rec.Holder != "h" || rec.Token != l.Token || rec.MarkMs != l.MarkMs {
		t.Errorf("record after the refused writes = %+v; want it unchanged", rec)
	}
	if _, err := raw.Create(child, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := st.Quarantine(ctx, 3); err != nil {
		t.Fatalf("Quarantine once the child is made again: %v", err)
	}
	if _, _, err := raw.Get(child); err == nil {
		t.Errorf("the holder's claim child %s outlived the quarantine", child)
	}
	if _, err := st.Extend(ctx, l, nowMs+20_000, 10*time.Second); !errors.Is(err, lease.ErrQuarantined) {
		t.Errorf("renewal of the quarantined holder: %v; want ErrQuarantined", err)
	}
}
