package zktest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// connect opens a session on e that the test closes.
func connect(t *testing.T, e *zktest.Ensemble) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(e.Servers(), 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLog{t}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// zkLog sends the client's log to the test's.
type zkLog struct{ t *testing.T }

func (l zkLog) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// get reads path, retrying while the session reconnects (bounded).
func get(t *testing.T, c *zk.Conn, path string) (string, error) {
	t.Helper()
	deadline := time.Now().Add(zktest.ReadyTimeout)
	for {
		b, _, err := c.Get(path)
		if err == nil || errors.Is(err, zk.ErrNoNode) || time.Now().After(deadline) {
			return string(b), err
		}
		time.Sleep(50 * time.Millisecond) // poll: the client reconnects on its own
	}
}

// TestRestoreSingle plays a backup restore on one server: a node written
// after the cold copy is gone once the copy is put back, and one written
// before is there.
func TestRestoreSingle(t *testing.T) {
	e := zktest.Start(t, 1)
	c := connect(t, e)
	if _, err := c.Create("/before", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	c2 := connect(t, e)
	if _, err := c2.Create("/after", []byte("2"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
	c3 := connect(t, e)
	if v, err := get(t, c3, "/before"); err != nil || v != "1" {
		t.Errorf("/before after the restore: %q, %v; want 1", v, err)
	}
	if _, err := get(t, c3, "/after"); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("/after after the restore: %v, want ErrNoNode", err)
	}
}

// TestEnsembleLeaderKill kills the leader of three servers: the two left
// elect another and serve what was written; the killed one rejoins.
// Freezing a follower and thawing it leaves the ensemble serving.
func TestEnsembleLeaderKill(t *testing.T) {
	e := zktest.Start(t, 3)
	c := connect(t, e)
	if _, err := c.Create("/x", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	lead := e.Leader()
	e.Kill(lead)
	e.WaitServing()
	if nl := e.Leader(); nl == lead {
		t.Fatalf("leader %d was killed, and is still reported leader", lead)
	}
	if v, err := get(t, c, "/x"); err != nil || v != "1" {
		t.Fatalf("/x after the leader was killed: %q, %v", v, err)
	}
	e.StartServer(lead)
	f := (e.Leader() + 1) % e.N()
	e.Freeze(f)
	if _, err := c.Set("/x", []byte("2"), -1); err != nil && !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("set with a follower frozen: %v", err)
	}
	e.Thaw(f)
	e.WaitServing()
	if v, err := get(t, c, "/x"); err != nil || (v != "2" && v != "1") {
		t.Fatalf("/x after the thaw: %q, %v", v, err)
	}
}

// TestMissingSkips: without java on PATH, Start skips the test (outside
// CI; under CI=true testenv.Missing fails it instead, which a test cannot
// show without failing).
func TestMissingSkips(t *testing.T) {
	var skipped, failed bool
	t.Run("no java", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("CI", "")
		defer func() { skipped, failed = t.Skipped(), t.Failed() }()
		zktest.Start(t, 1)
	})
	if !skipped || failed {
		t.Errorf("Start without java: skipped %v, failed %v; want a skip", skipped, failed)
	}
}
