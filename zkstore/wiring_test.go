package zkstore_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

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
