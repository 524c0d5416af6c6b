//go:build linux

package etcdproc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestReplaceFromEmpty replaces a member from an empty data directory and
// then kills another, so that the quorum rests on the replaced one: it
// must have caught up with every key, and no alarm is left.
func TestReplaceFromEmpty(t *testing.T) {
	c := startCluster(t)
	ctx := timeout(t, time.Minute)
	rev := put(t, newClient(t, c.Endpoints()...), "k", "v")
	old := c.Pid(1)
	if err := c.Replace(ctx, 1); err != nil {
		t.Fatalf("Replace(1): %v", err)
	}
	if c.Pid(1) == old || !c.Running(1) {
		t.Fatalf("member 1 after Replace: pid %d (was %d), running %v", c.Pid(1), old, c.Running(1))
	}
	if got, gotRev := get(t, newClient(t, c.Endpoint(1)), "k", clientv3.WithSerializable()); got != "v" || gotRev < rev {
		t.Errorf("replaced member: Get k = %q at revision %d, want v at %d or later", got, gotRev, rev)
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWritable(ctx); err != nil {
		t.Fatalf("members 1 (replaced) and 2 without 0: %v", err)
	}
	if alarms, err := c.Alarms(ctx); err != nil || len(alarms) != 0 {
		t.Errorf("Alarms = %v, %v; want none", alarms, err)
	}
	if err := c.DisarmAlarms(ctx); err != nil {
		t.Errorf("DisarmAlarms with none raised: %v", err)
	}
	if err := c.Put(ctx, "k2", "v2"); err != nil {
		t.Errorf("Put: %v", err)
	}
}

// TestElectionTiming starts a cluster with a slow election and checks
// that a killed leader's successor takes at least the election timeout.
func TestElectionTiming(t *testing.T) {
	c, err := Start(timeout(t, time.Minute), Config{
		Dir: filepath.Join(t.TempDir(), "etcd"), Command: memberCommand, Stderr: os.Stderr,
		Heartbeat: 200 * time.Millisecond, Election: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := timeout(t, time.Minute)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWritable(ctx); err != nil {
		t.Fatal(err)
	}
	if gap := time.Since(t0); gap < 2*time.Second {
		t.Errorf("writable %v after the leader's SIGKILL, want at least the 2 s election timeout", gap)
	}
}
