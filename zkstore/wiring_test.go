package zkstore_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// TestCheckIsWhatNewRefuses: Config.Check, which serve runs on its flags
// before it connects, refuses exactly what New refuses.
func TestCheckIsWhatNewRefuses(t *testing.T) {
	for name, cfg := range map[string]zkstore.Config{
		"zero":            {},
		"a path":          {Path: "/ids/prod", Region: 3},
		"relative path":   {Path: "snowfence"},
		"root":            {Path: "/"},
		"trailing slash":  {Path: "/snowfence/"},
		"reserved":        {Path: "/zookeeper/x"},
		"negative region": {Region: -1},
		"auth, no scheme": {Auth: []zkstore.Auth{{Secret: []byte("a:b")}}},
	} {
		_, newErr := zkstore.New(&zk.Conn{}, cfg)
		checkErr := cfg.Check()
		if (newErr == nil) != (checkErr == nil) || (checkErr != nil && !errors.Is(checkErr, lease.ErrInvalid)) {
			t.Errorf("%s: Check %v, New %v; want both nil or both ErrInvalid", name, checkErr, newErr)
		}
	}
}

// TestWithDigest: the digest ACL replaces the ACL, the credentials join
// the Auth given, and the Config it came from is left as it was.
func TestWithDigest(t *testing.T) {
	base := zkstore.Config{Path: "/x", ACL: zk.WorldACL(zk.PermRead), Auth: make([]zkstore.Auth, 1, 4)}
	base.Auth[0] = zkstore.Auth{Scheme: "ip", Secret: []byte("127.0.0.1")}
	got := base.WithDigest("fleet", "s3cret")
	if want := zk.DigestACL(zk.PermAll, "fleet", "s3cret"); !slices.Equal(got.ACL, want) {
		t.Errorf("ACL %v, want %v", got.ACL, want)
	}
	if len(got.Auth) != 2 || got.Auth[1].Scheme != "digest" || string(got.Auth[1].Secret) != "fleet:s3cret" {
		t.Errorf("Auth %+v, want the ip credentials and digest fleet:s3cret", got.Auth)
	}
	if len(base.Auth) != 1 || cap(base.Auth) != 4 || base.Auth[:2][1].Scheme != "" || !slices.Equal(base.ACL, zk.WorldACL(zk.PermRead)) {
		t.Errorf("WithDigest changed the Config it was called on: %+v", base)
	}
	if got.Path != "/x" {
		t.Errorf("Path %q, want the base's", got.Path)
	}
}

// TestRawKey: the lease znode of the store's keyspace, and its journal's
// parent; a negative number is refused.
func TestRawKey(t *testing.T) {
	s, err := zkstore.New(&zk.Conn{}, zkstore.Config{Path: "/ids", Region: 2})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.RawKey(170)
	if err != nil || k.Store != "zookeeper" || k.Keyspace != 2 || k.Machine != 170 || k.Key != "/ids/leases/2/170" ||
		!slices.Equal(k.Keys, []string{"/ids/leases/2/170", "/ids/journal/2/170"}) {
		t.Errorf("RawKey(170) = %+v, %v", k, err)
	}
	if _, err := s.RawKey(-1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("RawKey(-1): %v, want ErrInvalid", err)
	}
}

// TestFleetNeedsNoAdminPermission: what docs/lease-stores.md says the
// store needs — READ, WRITE, CREATE and DELETE on its znodes, not ADMIN —
// is enough for a holder's and an operator's every write: a schedule set
// at once, claims, renewals, releases, a quarantine and its release, a
// raise of the marks, the journal and the registry.
func TestFleetNeedsNoAdminPermission(t *testing.T) {
	e := zktest.Start(t, 1)
	perms := int32(zk.PermRead | zk.PermWrite | zk.PermCreate | zk.PermDelete)
	cfg := zkstore.Config{Path: newPath(t), ACL: zk.DigestACL(perms, "fleet", "s3cret"),
		Auth: []zkstore.Auth{{Scheme: "digest", Secret: []byte("fleet:s3cret")}}}
	s, err := zkstore.Connect(e.Servers(), sessionTimeout, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s with %s: %v", what, zk.DigestACL(perms, "fleet", "s3cret")[0].ID, err)
		}
	}
	_, err = s.SetFleetScheduleUnused(ctx, 0, "v1")
	step("schedule set at once", err)
	nowMs := time.Now().UnixMilli()
	l := mustClaim(t, s, req("a", 0, 0, nowMs))
	l, err = s.Extend(ctx, l, nowMs+10_000, 10*time.Second)
	step("extend", err)
	step("release", s.Release(ctx, l, nowMs+1))
	l = mustClaim(t, s, req("b", 0, 0, l.MarkMs+1))
	step("quarantine", s.Quarantine(ctx, 0))
	step("unquarantine", s.Unquarantine(ctx, 0))
	_, err = s.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 3}, l.MarkMs+60_000)
	step("raise marks", err)
	h, err := s.History(ctx, 0)
	step("history", err)
	if len(h) != 2 {
		t.Errorf("history of 0: %d entries, want the two claims", len(h))
	}
	_, err = s.List(ctx)
	step("list", err)
	_, err = s.RegistryIdentity(ctx)
	step("registry identity", err)
	// The fleet's user really lacks ADMIN on what the store made.
	c := dial(t, e)
	if err := c.AddAuth("digest", []byte("fleet:s3cret")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL(cfg.Path+"/leases/0/0", zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("the fleet's user changing a lease znode's ACL: %v, want ErrNoAuth (the znode has no ADMIN for it)", err)
	}
}
