//go:build linux

package etcdproc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStartPutGet(t *testing.T) {
	c := startCluster(t)
	if c.Size() != 3 {
		t.Fatalf("Size = %d, want 3", c.Size())
	}
	eps := c.Endpoints()
	if len(eps) != 3 || eps[0] == eps[1] || eps[1] == eps[2] || eps[0] == eps[2] {
		t.Fatalf("Endpoints = %v, want 3 distinct URLs", eps)
	}
	pids := map[int]bool{}
	for i := range c.Size() {
		if eps[i] != c.Endpoint(i) {
			t.Errorf("Endpoint(%d) = %s, want %s", i, c.Endpoint(i), eps[i])
		}
		if !c.Running(i) || c.Paused(i) {
			t.Errorf("member %d: Running %v, Paused %v, want running and not paused", i, c.Running(i), c.Paused(i))
		}
		pids[c.Pid(i)] = true
	}
	if len(pids) != 3 || pids[0] || pids[os.Getpid()] {
		t.Errorf("Pids = %v, want 3 distinct child processes", pids)
	}
	rev := put(t, newClient(t, eps...), "k", "v")
	for i := range c.Size() {
		got, gotRev := get(t, newClient(t, c.Endpoint(i)), "k")
		if got != "v" || gotRev != rev {
			t.Errorf("member %d: Get k = %q at revision %d, want v at %d", i, got, gotRev, rev)
		}
	}
}

// TestWaitWritableCommitsWithoutRevision checks the writability probe: it
// goes through raft (the raft index grows) but changes no key (the
// revision stays).
func TestWaitWritableCommitsWithoutRevision(t *testing.T) {
	c := startCluster(t)
	cli := newClient(t, c.Endpoints()...)
	rev := put(t, cli, "k", "v")
	ctx := timeout(t, 30*time.Second)
	before, err := cli.Status(ctx, c.Endpoint(0))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.WaitWritable(ctx); err != nil {
			t.Fatalf("WaitWritable: %v", err)
		}
	}
	after, err := cli.Status(ctx, c.Endpoint(0))
	if err != nil {
		t.Fatal(err)
	}
	if after.Header.Revision != rev {
		t.Errorf("revision after WaitWritable = %d, want %d (unchanged)", after.Header.Revision, rev)
	}
	if after.RaftIndex < before.RaftIndex+3 {
		t.Errorf("raft index %d -> %d over 3 WaitWritable, want at least 3 entries committed", before.RaftIndex, after.RaftIndex)
	}
	if resp, err := cli.Get(ctx, ProbeKey); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("Get %s = %v, %v; want no key", ProbeKey, resp, err)
	}
}

func TestKillLeader(t *testing.T) {
	c := startCluster(t)
	ctx := timeout(t, time.Minute)
	put(t, newClient(t, c.Endpoints()...), "k", "v0")
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.Kill(old); err != nil {
		t.Fatalf("Kill(%d): %v", old, err)
	}
	if c.Running(old) {
		t.Fatalf("Running(%d) = true after Kill", old)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader after killing %d: %v", old, err)
	}
	elected := time.Since(t0)
	if err := c.WaitWritable(ctx); err != nil {
		t.Fatalf("WaitWritable after killing %d: %v", old, err)
	}
	writable := time.Since(t0)
	t.Logf("killed leader %d: member %d elected after %v, writable after %v",
		old, next, elected.Round(time.Millisecond), writable.Round(time.Millisecond))
	if next == old {
		t.Fatalf("Leader = %d, the killed member", next)
	}
	if bound := 5 * time.Second; writable > bound {
		t.Errorf("writable %v after the leader's crash, want within %v", writable, bound)
	}
	var survivors []string
	for i := range c.Size() {
		if i != old {
			survivors = append(survivors, c.Endpoint(i))
		}
	}
	rev := put(t, newClient(t, survivors...), "k", "v1")

	if err := c.Restart(ctx, old); err != nil {
		t.Fatalf("Restart(%d): %v", old, err)
	}
	own := newClient(t, c.Endpoint(old))
	// Ready means the member applied everything committed before it
	// started, so its own store answers at once.
	if got, gotRev := get(t, own, "k", clientv3.WithSerializable()); got != "v1" || gotRev < rev {
		t.Errorf("restarted member %d, serializable Get k = %q at revision %d, want v1 at %d or later", old, got, gotRev, rev)
	}
	if got, gotRev := get(t, own, "k"); got != "v1" || gotRev < rev {
		t.Errorf("restarted member %d, linearizable Get k = %q at revision %d, want v1 at %d or later", old, got, gotRev, rev)
	}
}

func TestPauseTwoLosesQuorum(t *testing.T) {
	c := startCluster(t)
	ctx := timeout(t, time.Minute)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	paused := []int{leader, (leader + 1) % c.Size()}
	for _, i := range paused {
		if err := c.Pause(i); err != nil {
			t.Fatalf("Pause(%d): %v", i, err)
		}
		if state, err := procState(c.Pid(i)); err != nil || state != 'T' || !c.Paused(i) {
			t.Fatalf("member %d after Pause: state %c (%v), Paused %v; want stopped", i, state, err, c.Paused(i))
		}
	}
	cli := newClient(t, c.Endpoints()...)
	if _, err := cli.Put(timeout(t, time.Second), "k", "no quorum"); err == nil {
		t.Fatalf("Put with members %v paused succeeded, want an error", paused)
	}
	for _, i := range paused {
		if err := c.Resume(i); err != nil {
			t.Fatalf("Resume(%d): %v", i, err)
		}
	}
	t0 := time.Now()
	if err := c.WaitWritable(ctx); err != nil {
		t.Fatalf("WaitWritable after Resume: %v", err)
	}
	t.Logf("writable %v after resuming members %v", time.Since(t0).Round(time.Millisecond), paused)
	rev := put(t, cli, "k", "quorum")
	if got, gotRev := get(t, cli, "k"); got != "quorum" || gotRev < rev {
		t.Errorf("Get k = %q at %d, want quorum at %d or later", got, gotRev, rev)
	}
}

func TestRestoreAll(t *testing.T) {
	c := startCluster(t)
	ctx := timeout(t, 2*time.Minute)
	cli := newClient(t, c.Endpoints()...)
	snapRev := put(t, cli, "k", "old")
	path := filepath.Join(t.TempDir(), "snapshot.db")
	if err := c.Snapshot(ctx, path); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	var lastRev int64
	for _, v := range []string{"new1", "new2", "new3"} {
		lastRev = put(t, cli, "k", v)
	}
	id0, err := c.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := c.RestoreAll(ctx, path, RestoreOptions{NewClusterToken: true}); err != nil {
		t.Fatalf("RestoreAll(new token): %v", err)
	}
	id1, err := c.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id1 == id0 {
		t.Errorf("cluster ID after restore with a new token = %x, want a new one", id1)
	}
	// etcd restores the snapshot's revision: it falls from lastRev.
	if got, rev := get(t, newClient(t, c.Endpoints()...), "k"); got != "old" || rev != snapRev {
		t.Errorf("after RestoreAll: Get k = %q at revision %d, want old at %d (was %d before)", got, rev, snapRev, lastRev)
	}

	const bump = 1000
	if err := c.RestoreAll(ctx, path, RestoreOptions{RevisionBump: bump}); err != nil {
		t.Fatalf("RestoreAll(bump): %v", err)
	}
	id2, err := c.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id2 != id1 {
		t.Errorf("cluster ID after restore with the same token = %x, want %x", id2, id1)
	}
	cli2 := newClient(t, c.Endpoints()...)
	if got, rev := get(t, cli2, "k"); got != "old" || rev != snapRev+bump {
		t.Errorf("after RestoreAll with bump: Get k = %q at revision %d, want old at %d", got, rev, snapRev+bump)
	}
	if _, err := cli2.Get(ctx, "k", clientv3.WithRev(snapRev)); err == nil {
		t.Errorf("Get k at revision %d after a bumped restore succeeded, want compacted", snapRev)
	}
}

func TestStateErrors(t *testing.T) {
	c := startCluster(t)
	ctx := timeout(t, time.Minute)
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"Kill a killed member", c.Kill(1), ErrNotRunning},
		{"Pause a killed member", c.Pause(1), ErrNotRunning},
		{"Pause a paused member", c.Pause(0), ErrPaused},
		{"Resume a running member", c.Resume(2), ErrNotPaused},
		{"Restart a running member", c.Restart(ctx, 2), ErrRunning},
		{"Kill member -1", c.Kill(-1), ErrNoMember},
		{"Restart member 3", c.Restart(ctx, 3), ErrNoMember},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	// A killed, then paused member: two of three down, no quorum.
	if err := c.WaitWritable(timeout(t, 2*time.Second)); err == nil {
		t.Errorf("WaitWritable with member 0 paused and 1 killed succeeded, want an error")
	}
	if err := c.Kill(0); err != nil {
		t.Fatalf("Kill a paused member: %v", err)
	}
	if c.Paused(0) || c.Running(0) {
		t.Errorf("member 0 after Kill: Paused %v, Running %v; want neither", c.Paused(0), c.Running(0))
	}
	if _, err := Start(ctx, Config{Dir: filepath.Dir(c.members[0].dir), Command: memberCommand}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Start on a used Dir = %v, want %v", err, fs.ErrExist)
	}
}

func TestCloseReapsMembers(t *testing.T) {
	c := startCluster(t)
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i := range c.Size() {
		pids = append(pids, c.Pid(i))
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("member %d (pid %d) after Close: kill(pid, 0) = %v, want ESRCH", i, pid, err)
		}
		if c.Running(i) || c.Pid(i) != 0 {
			t.Errorf("member %d after Close: Running %v, Pid %d", i, c.Running(i), c.Pid(i))
		}
		if _, err := os.Stat(filepath.Join(c.members[i].dir, "member")); err != nil {
			t.Errorf("member %d's data after Close: %v, want kept", i, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if slices.Contains(pids, 0) {
		t.Errorf("pids %v, want all non-zero", pids)
	}
}

// BenchmarkStart measures how long a 3-member cluster takes from Start to
// its first committed write; closing it is not timed.
func BenchmarkStart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c, err := Start(b.Context(), Config{Dir: b.TempDir(), Command: memberCommand})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
