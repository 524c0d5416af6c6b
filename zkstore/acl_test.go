package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// TestDigestACL: a fleet's stores created with a digest ACL and its
// credentials claim and renew; a store and a client without them can
// neither read nor write the leases.
func TestDigestACL(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	cfg := zkstore.Config{Path: path, ACL: zk.DigestACL(zk.PermAll, "fleet", "s3cret"),
		Auth: []zkstore.Auth{{Scheme: "digest", Secret: []byte("fleet:s3cret")}}}
	as, err := zkstore.Connect(e.Servers(), sessionTimeout, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, as, req("a", 0, 0, nowMs))
	if a, err = as.Extend(t.Context(), a, nowMs+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	outsider := open(t, e, path)
	if l, err := outsider.Claim(t.Context(), req("x", 0, 3, a.MarkMs+1)); err == nil {
		t.Fatalf("a store without the fleet's credentials claimed %+v", l)
	} else if errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("a store without the fleet's credentials read the leases: %v", err)
	}
	if _, err := dial(t, e).Set(path+"/leases/0/0", []byte("{}"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without the credentials writing a lease znode: %v, want ErrNoAuth", err)
	}
	if rec, err := as.Get(t.Context(), 0); err != nil || rec.Holder != "a" || rec.MarkMs != a.MarkMs {
		t.Errorf("A's record after the outsiders: %+v, %v", rec, err)
	}
	if _, err := zkstore.Connect(e.Servers(), sessionTimeout, zkstore.Config{Path: path, Auth: []zkstore.Auth{{Secret: []byte("x")}}}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("an Auth without a scheme: %v, want ErrInvalid", err)
	}
}
