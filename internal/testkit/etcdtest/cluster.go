package etcdtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// A Cluster is an n-member etcd cluster running in this process, each member
// on its own loopback ports and data directory under the test's TempDir.
// Members are numbered 0..n-1.
type Cluster struct {
	tb      testing.TB
	token   string
	members []*member
	mu      sync.Mutex
	clients []*clientv3.Client
}

// Start starts an n-member cluster (n = 1 and n = 3 are the usual sizes),
// waits until every member serves, and stops it when the test ends. It fails
// the test if the cluster cannot start.
func Start(tb testing.TB, n int) *Cluster {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("etcdtest.Start: n = %d, want at least 1 member", n)
	}
	root := tb.TempDir()
	var err error
	for try := range attempts {
		var c *Cluster
		c, err = start(tb, filepath.Join(root, fmt.Sprintf("try%d", try)), n)
		if err == nil {
			tb.Cleanup(c.Close)
			return c
		}
		if !isAddrInUse(err) {
			break
		}
	}
	tb.Fatalf("etcdtest.Start(%d): %v", n, err)
	return nil
}

// start makes one attempt at starting a cluster in dir.
func start(tb testing.TB, dir string, n int) (*Cluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{tb: tb, token: "etcdtest-" + randomHex()}
	for i := range n {
		c.members = append(c.members, &member{
			name:   fmt.Sprintf("m%d", i),
			dir:    filepath.Join(dir, fmt.Sprintf("m%d", i)),
			client: loopbackURL(ports[2*i]),
			peer:   loopbackURL(ports[2*i+1]),
		})
	}
	ic := c.initialCluster()
	for _, m := range c.members {
		if err := m.start(ic, c.token); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := m.waitReady(); err != nil {
			c.stopAll()
			return nil, err
		}
	}
	return c, nil
}

// initialCluster is etcd's --initial-cluster value for the members.
func (c *Cluster) initialCluster() string {
	parts := make([]string, len(c.members))
	for i, m := range c.members {
		parts[i] = m.name + "=" + m.peer.String()
	}
	return strings.Join(parts, ",")
}

// Size is the number of members, running or stopped.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns the client URLs of every member, running or stopped.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.client.String()
	}
	return eps
}

// Endpoint returns member i's client URL.
func (c *Cluster) Endpoint(i int) string { return c.members[i].client.String() }

// Client returns a client of every member's endpoint; it is closed when the
// test ends (or when the cluster is closed).
func (c *Cluster) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	return c.newClient(tb, c.Endpoints())
}

// MemberClient returns a client of member i alone; it is closed when the
// test ends.
func (c *Cluster) MemberClient(tb testing.TB, i int) *clientv3.Client {
	tb.Helper()
	return c.newClient(tb, []string{c.Endpoint(i)})
}

func (c *Cluster) newClient(tb testing.TB, eps []string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcdtest: client of %v: %v", eps, err)
	}
	c.mu.Lock()
	c.clients = append(c.clients, cli)
	c.mu.Unlock()
	tb.Cleanup(func() { cli.Close() })
	return cli
}

// Leader returns the index of the member that leads the cluster, waiting (up
// to 30 s) for an election if there is no leader yet.
func (c *Cluster) Leader(tb testing.TB) int {
	tb.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		for i, m := range c.members {
			if m.etcd == nil {
				continue
			}
			if s := m.etcd.Server; s.Leader() == s.MemberID() {
				return i
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("etcdtest: no leader after %v", readyTimeout)
		}
		time.Sleep(10 * time.Millisecond) // poll: only etcd can elect
	}
}

// Running reports whether member i is running.
func (c *Cluster) Running(i int) bool { return c.members[i].etcd != nil }

// Stop shuts member i down (a leader hands its leadership over first, as
// etcd does on a clean shutdown) and waits until it has stopped. Stopping a
// stopped member does nothing.
func (c *Cluster) Stop(i int) {
	c.members[i].stop()
}

// Restart starts stopped member i again on its old ports and data. It waits
// for the member to rejoin when enough members are running to form a
// quorum, and returns at once otherwise.
func (c *Cluster) Restart(tb testing.TB, i int) {
	tb.Helper()
	m := c.members[i]
	if m.etcd != nil {
		tb.Fatalf("etcdtest: Restart(%d): member is running", i)
	}
	if err := m.start(c.initialCluster(), c.token); err != nil {
		tb.Fatalf("etcdtest: Restart(%d): %v", i, err)
	}
	running := 0
	for _, m := range c.members {
		if m.etcd != nil {
			running++
		}
	}
	if running > len(c.members)/2 {
		if err := m.waitReady(); err != nil {
			tb.Fatalf("etcdtest: Restart(%d): %v", i, err)
		}
	}
}

// Close closes the clients handed out and stops every member; it is safe to
// call more than once. Start arranges for it to run when the test ends.
func (c *Cluster) Close() {
	c.mu.Lock()
	clients := c.clients
	c.clients = nil
	c.mu.Unlock()
	for _, cli := range clients {
		cli.Close()
	}
	c.stopAll()
}

// stopAll stops followers before the leader, so the leader does not try to
// hand its leadership to a member that is going away.
func (c *Cluster) stopAll() {
	var leader *member
	for _, m := range c.members {
		if m.etcd == nil || m.etcd.Server == nil {
			m.stop()
			continue
		}
		if s := m.etcd.Server; s.Leader() == s.MemberID() {
			leader = m
			continue
		}
		m.stop()
	}
	if leader != nil {
		leader.stop()
	}
}

// randomHex returns 8 random bytes in hex, to make cluster tokens (and so
// cluster IDs) differ between clusters.
func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
