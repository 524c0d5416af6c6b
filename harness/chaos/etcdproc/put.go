//go:build linux

package etcdproc

import (
	"context"
	"fmt"
)

// Put writes value at key through the running, unpaused members, within
// one call's timeout (a second): the writes of another tenant of the
// cluster, which make every member's log and database grow.
func (c *Cluster) Put(ctx context.Context, key, value string) error {
	cli, err := c.activeClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		return fmt.Errorf("etcdproc: put %s: %w", key, err)
	}
	return nil
}
