package zkstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// TestRestoreSessionReplaced: after a backup restore the server is behind
// the zxid the store's session saw, and refuses it; nothing else writes,
// so it would never catch up. A store Connect opened replaces its session
// after twice the session timeout without one, and is served again.
func TestRestoreSessionReplaced(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	st, err := zkstore.Connect(e.Servers(), 2*time.Second, zkstore.Config{Path: newPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	nowMs := time.Now().UnixMilli()
	mustClaim(t, st, req("d", 0, 0, nowMs))
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	for i := range 5 {
		if err := settle(t, func(ctx context.Context) error { _, err := st.Claim(ctx, req("d", 1+i, 1+i, nowMs)); return err }); err != nil {
			t.Fatal(err)
		}
	}
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
	start := time.Now()
	err = settle(t, func(ctx context.Context) error { _, err := st.Get(ctx, 0); return err })
	if err != nil && !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("the store's read after the restore, %v on: %v; want it served again", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("served again %v after the restored server started: %v", time.Since(start).Round(time.Millisecond), err)
}
