package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func put(t *testing.T, cli *clientv3.Client, k, v string) *clientv3.PutResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Put(ctx, k, v)
	if err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
	return resp
}

func get(t *testing.T, cli *clientv3.Client, k string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, k)
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

func TestStartOne(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := Start(t, 1)
	put(t, c.Client(t), "k", "v")
	t.Logf("1 member: start to first Put %v", time.Since(begin))
	if got := c.Leader(t); got != 0 {
		t.Errorf("Leader() = %d, want 0", got)
	}
	if v, _ := get(t, c.Client(t), "k"); v != "v" {
		t.Errorf("Get(k) = %q, want v", v)
	}
}

func TestThreeMembersSurviveLeaderStop(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := Start(t, 3)
	cli := c.Client(t)
	put(t, cli, "k", "1")
	t.Logf("3 members: start to first Put %v", time.Since(begin))
	old := c.Leader(t)
	c.Stop(old)
	if c.Running(old) {
		t.Fatalf("Running(%d) after Stop = true", old)
	}
	put(t, cli, "k", "2")
	if now := c.Leader(t); now == old {
		t.Errorf("Leader() = %d after stopping it", now)
	}
	c.Restart(t, old)
	if v, _ := get(t, c.MemberClient(t, old), "k"); v != "2" {
		t.Errorf("restarted member: Get(k) = %q, want 2", v)
	}
}

func TestRestoreRollsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		opts     RestoreOptions
		sameID   bool
		revFalls bool
	}{
		{"same token", RestoreOptions{}, true, true},
		{"new token, bumped revision", RestoreOptions{NewClusterToken: true, RevisionBump: 1000}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Start(t, 1)
			cli := c.Client(t)
			put(t, cli, "k", "old")
			snap := c.Snapshot(t)
			before := put(t, cli, "k", "new")
			c.Restore(t, snap, tc.opts)
			cli = c.Client(t)
			if v, _ := get(t, cli, "k"); v != "old" {
				t.Errorf("after restore Get(k) = %q, want old", v)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			after, err := cli.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if got := after.Header.ClusterId == before.Header.ClusterId; got != tc.sameID {
				t.Errorf("cluster id %x → %x: same = %v, want %v", before.Header.ClusterId, after.Header.ClusterId, got, tc.sameID)
			}
			if got := after.Header.Revision < before.Header.Revision; got != tc.revFalls {
				t.Errorf("revision %d → %d: fell = %v, want %v", before.Header.Revision, after.Header.Revision, got, tc.revFalls)
			}
		})
	}
}

func TestBinaryMissing(t *testing.T) {
	if v := (testing.Short()); v {
		t.Skip("short")
	}
	t.Setenv("CI", "")
	ok := t.Run("skip", func(t *testing.T) {
		StartBinary(t, "/nonexistent/etcd")
		t.Error("StartBinary returned for a missing executable")
	})
	if !ok {
		t.Error("missing executable without CI=true failed the test, want skip")
	}
}

func TestBinary(t *testing.T) {
	t.Parallel()
	b := StartBinary(t, DebianEtcd)
	t.Logf("%s at %v", b.Version(), b.Endpoints())
	put(t, b.Client(t), "k", "v")
}
