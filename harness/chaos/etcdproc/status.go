//go:build linux

package etcdproc

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// callTimeout bounds one request to one member, so a paused or
	// crashed member costs a poll round no more than this.
	callTimeout = time.Second
	// pollEvery is the pause between rounds of a poll.
	pollEvery = 20 * time.Millisecond
	// ProbeKey is the key of the write that WaitWritable attempts (and
	// never performs; see the package documentation).
	ProbeKey = "etcdproc/writable"
)

// active returns the indexes of the members that run and are not paused.
func (c *Cluster) active() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var idx []int
	for i, m := range c.members {
		if m.proc != nil && m.proc.running() && !m.paused {
			idx = append(idx, i)
		}
	}
	return idx
}

// client returns a client of the given endpoints that logs nothing; it
// connects lazily, so endpoints may be down.
func client(eps []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcdproc: client of %v: %w", eps, err)
	}
	return cli, nil
}

// poll calls try every pollEvery until it reports done, or until ctx or
// the cluster's Timeout ends; then it returns the last error try returned,
// wrapped with what ended the wait.
func (c *Cluster) poll(ctx context.Context, what string, try func(ctx context.Context) (bool, error)) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var last error
	for {
		done, err := try(ctx)
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		t := time.NewTimer(pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			if last != nil {
				return fmt.Errorf("etcdproc: %s: %w (last error: %v)", what, context.Cause(ctx), last)
			}
			return fmt.Errorf("etcdproc: %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// status asks member i for its status, within callTimeout.
func (c *Cluster) status(ctx context.Context, cli *clientv3.Client, i int) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := cli.Status(ctx, c.Endpoint(i))
	if err != nil {
		return nil, fmt.Errorf("etcdproc: status of member %d: %w", i, err)
	}
	return st, nil
}

// Leader returns the index of the member that leads the cluster, waiting
// for an election if there is no leader. It asks every running, unpaused
// member for its status; the leader is a member that reports itself as
// leader, and should two do (an old leader just resumed, not yet told of
// the newer term), the one with the higher raft term.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	cli, err := client(c.Endpoints())
	if err != nil {
		return -1, err
	}
	defer cli.Close()
	leader := -1
	err = c.poll(ctx, "no leader", func(ctx context.Context) (bool, error) {
		var term uint64
		var last error
		for _, i := range c.active() {
			st, err := c.status(ctx, cli, i)
			if err != nil {
				last = err
				continue
			}
			if st.Leader == st.Header.MemberId && (leader < 0 || st.RaftTerm > term) {
				leader, term = i, st.RaftTerm
			}
		}
		return leader >= 0, last
	})
	if err != nil {
		return -1, err
	}
	return leader, nil
}

// ClusterID returns the cluster ID that the first running, unpaused member
// to answer reports.
func (c *Cluster) ClusterID(ctx context.Context) (uint64, error) {
	cli, err := client(c.Endpoints())
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	var id uint64
	err = c.poll(ctx, "cluster ID", func(ctx context.Context) (bool, error) {
		var last error
		for _, i := range c.active() {
			st, err := c.status(ctx, cli, i)
			if err == nil {
				id = st.Header.ClusterId
				return true, nil
			}
			last = err
		}
		return false, last
	})
	return id, err
}

// WaitWritable waits until a write commits through a client of the
// running, unpaused members' endpoints: the cluster has a leader and a
// quorum. The write is a transaction that changes no key and so leaves the
// revision alone (see ProbeKey). With no member running it reports
// ErrNotRunning at once.
func (c *Cluster) WaitWritable(ctx context.Context) error {
	idx := c.active()
	if len(idx) == 0 {
		return fmt.Errorf("etcdproc: WaitWritable: every member: %w", ErrNotRunning)
	}
	eps := make([]string, len(idx))
	for k, i := range idx {
		eps[k] = c.Endpoint(i)
	}
	cli, err := client(eps)
	if err != nil {
		return err
	}
	defer cli.Close()
	return c.poll(ctx, "not writable", func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(ProbeKey), "<", 0)).
			Then(clientv3.OpPut(ProbeKey, "")).
			Commit()
		return err == nil, err
	})
}
