package zkstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// sessionTimeout is the tests' ZooKeeper session timeout.
const sessionTimeout = 4 * time.Second

var pathSeq atomic.Int64

// newPath returns a znode path no other store of the test run uses.
func newPath(t *testing.T) string {
	return fmt.Sprintf("/t%d/%s-%d", time.Now().UnixNano()%1e9, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), pathSeq.Add(1))
}

// quiet discards go-zookeeper's log, which would outlive a test.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// dial opens a session on e, closed when the test ends.
func dial(t *testing.T, e *zktest.Ensemble) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(e.Servers(), sessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// open returns a Store on path, on a session of its own, closed when the
// test ends.
func open(t *testing.T, e *zktest.Ensemble, path string) *zkstore.Store {
	t.Helper()
	s, err := zkstore.New(dial(t, e), zkstore.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// node is one znode of a copy: its path and data.
type node struct {
	path string
	data []byte
}

// walk returns every znode under root (root included), parents first.
func walk(t *testing.T, c *zk.Conn, root string) []node {
	t.Helper()
	if _, err := c.Sync(root); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("sync %s: %v", root, err)
	}
	var out []node
	var visit func(p string)
	visit = func(p string) {
		data, _, err := c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		out = append(out, node{p, data})
		kids, _, err := c.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("children of %s: %v", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			visit(p + "/" + k)
		}
	}
	visit(root)
	return out
}

// copyAside copies every znode under root aside and returns the function
// that writes the copy back in place of what is there then: the znodes of
// the copy set to its data (created if gone), those the copy lacks
// deleted. The versions and zxids go on rising, as znodes written back by
// hand do: only the records show the data went back.
func copyAside(t *testing.T, e *zktest.Ensemble, root string) func() {
	t.Helper()
	c := dial(t, e)
	saved := walk(t, c, root)
	return func() {
		t.Helper()
		keep := map[string]bool{}
		for _, n := range saved {
			keep[n.path] = true
			if _, err := c.Set(n.path, n.data, -1); errors.Is(err, zk.ErrNoNode) {
				_, err = c.Create(n.path, n.data, 0, zk.WorldACL(zk.PermAll))
				if err != nil {
					t.Fatalf("put back %s: %v", n.path, err)
				}
			} else if err != nil {
				t.Fatalf("put back %s: %v", n.path, err)
			}
		}
		now := walk(t, c, root)
		for i := len(now) - 1; i >= 0; i-- { // children before parents
			if !keep[now[i].path] {
				if err := c.Delete(now[i].path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					t.Fatalf("delete %s: %v", now[i].path, err)
				}
			}
		}
	}
}

// mustClaim claims in r or fails the test.
func mustClaim(t *testing.T, s lease.Store, r lease.ClaimRequest) *lease.Lease {
	t.Helper()
	l, err := s.Claim(t.Context(), r)
	if err != nil {
		t.Fatalf("claim %+v: %v", r, err)
	}
	return l
}
