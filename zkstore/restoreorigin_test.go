package zkstore_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/zkstore"
)

// deleteTree deletes znode p and everything under it.
func deleteTree(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	kids, _, err := c.Children(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		deleteTree(t, c, p+"/"+k)
	}
	if err := c.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
}

// TestPathMadeAnewNoticedByAClaim: the store's path is deleted and made
// again (by hand, or a restore to a copy from before it existed) while X
// holds a number, and another process claims there first, making a new
// origin znode. X's next claim, on a number whose record it never read,
// finds no sign in the records; the origin's id and the region znode's
// stat (created anew) show the restore, and the claim starts a restore
// window ahead: the holders the wipe cut off may still issue.
func TestPathMadeAnewNoticedByAClaim(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	x := open(t, e, path)
	mustClaim(t, x, req("x", 0, 0, time.Now().UnixMilli()))
	deleteTree(t, dial(t, e), path)
	mustClaim(t, open(t, e, path), req("y", 2, 2, time.Now().UnixMilli()))
	r := req("x", 1, 1, time.Now().UnixMilli())
	if l := mustClaim(t, x, r); l.StartMs < r.NowMs+zkstore.MaxRestoreWindow.Milliseconds() {
		t.Errorf("X's claim on the path made anew starts at %d, want ≥ %d: the restore (a new origin id, a region znode created "+
			"anew) not noticed, want ErrRestored's floor", l.StartMs, r.NowMs+zkstore.MaxRestoreWindow.Milliseconds())
	}
}
