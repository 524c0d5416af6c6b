//go:build linux

package etcdproc

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Alarms lists the cluster's active alarms ("NOSPACE on member m1", …),
// as `etcdctl alarm list` does, asking the running, unpaused members.
func (c *Cluster) Alarms(ctx context.Context) ([]string, error) {
	cli, err := c.activeClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := cli.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcdproc: alarm list: %w", err)
	}
	var out []string
	for _, a := range resp.Alarms {
		out = append(out, fmt.Sprintf("%v on member %s", a.Alarm, c.nameOf(ctx, cli, a.MemberID)))
	}
	return out, nil
}

// DisarmAlarms disarms every active alarm, as `etcdctl alarm disarm` does
// (clientv3's AlarmDisarm with no member and no alarm disarms them all).
func (c *Cluster) DisarmAlarms(ctx context.Context) error {
	cli, err := c.activeClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{Alarm: etcdserverpb.AlarmType_NONE}); err != nil {
		return fmt.Errorf("etcdproc: alarm disarm: %w", err)
	}
	return nil
}

// activeClient is a client of the running, unpaused members.
func (c *Cluster) activeClient() (*clientv3.Client, error) {
	var eps []string
	for _, i := range c.active() {
		eps = append(eps, c.Endpoint(i))
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("etcdproc: every member: %w", ErrNotRunning)
	}
	return client(eps)
}

// nameOf is the name of the member with the given ID, or the ID in hex.
func (c *Cluster) nameOf(ctx context.Context, cli *clientv3.Client, id uint64) string {
	if list, err := cli.MemberList(ctx); err == nil {
		for _, m := range list.Members {
			if m.ID == id && m.Name != "" {
				return m.Name
			}
		}
	}
	return fmt.Sprintf("%x", id)
}
