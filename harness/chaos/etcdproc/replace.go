//go:build linux

package etcdproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Replace does what etcd's runbook says for a member whose data is lost:
// it kills member i if it runs, removes it from the cluster (member
// remove, through the other members), empties its data directory, adds it
// back under the same peer URL (member add: a new member ID) and starts it
// with --initial-cluster-state existing, then waits until it is ready: it
// has fetched a snapshot from the leader and caught up. The other members
// must keep a quorum throughout. Replace reports a member that is not in
// the membership the others list, and any error of etcd's membership API.
func (c *Cluster) Replace(ctx context.Context, i int) error {
	if err := c.check(i); err != nil {
		return fmt.Errorf("etcdproc: Replace: %w", err)
	}
	m := c.members[i]
	if c.Running(i) {
		if err := c.Kill(i); err != nil {
			return fmt.Errorf("etcdproc: Replace(%d): %w", i, err)
		}
	}
	var eps []string
	for _, k := range c.active() {
		eps = append(eps, c.Endpoint(k))
	}
	if len(eps) == 0 {
		return fmt.Errorf("etcdproc: Replace(%d): the other members: %w", i, ErrNotRunning)
	}
	cli, err := client(eps)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := c.bound(ctx)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): member list: %w", i, err)
	}
	var id uint64
	for _, mm := range list.Members {
		if slices.Contains(mm.PeerURLs, m.peer) {
			id = mm.ID
		}
	}
	if id == 0 {
		return fmt.Errorf("etcdproc: Replace(%d): no member with peer URL %s in the membership", i, m.peer)
	}
	if _, err := cli.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): member remove %x: %w", i, id, err)
	}
	if err := os.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): %w", i, err)
	}
	// etcd refuses a reconfiguration until the leader has heard from a
	// quorum of the new membership; the remove just committed, so retry.
	err = c.poll(ctx, "member add", func(ctx context.Context) (bool, error) {
		actx, acancel := context.WithTimeout(ctx, callTimeout)
		defer acancel()
		_, err := cli.MemberAdd(actx, []string{m.peer})
		// A retry after an add whose answer was lost finds it done.
		return err == nil || errors.Is(err, rpctypes.ErrPeerURLExist), err
	})
	if err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): %w", i, err)
	}
	p, err := c.launch(i, "existing")
	if err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): %w", i, err)
	}
	if err := p.waitReady(ctx); err != nil {
		return fmt.Errorf("etcdproc: Replace(%d): %w", i, err)
	}
	return nil
}
