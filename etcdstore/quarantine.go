package etcdstore

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// Quarantine makes a number unclaimable and unrenewable by writing its
// quarantine key. A current holder is not evicted: its next Extend fails
// with lease.ErrQuarantined and it stops at the mark it had reserved.
// Quarantining a quarantined number changes nothing and is not an error.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	quar, owner := s.keys.quarantine(machine), s.keys.owner(machine)
	resp, err := s.txn(ctx,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(quar), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(quar, encode(quarantineValue{QuarantinedAtMs: time.Now().UnixMilli()})), clientv3.OpGet(owner)},
		[]clientv3.Op{clientv3.OpGet(owner)})
	if err != nil {
		return fmt.Errorf("etcdstore: quarantine machine %d: %w; check with Get whether it took effect", machine, err)
	}
	ov, _ := parseOwner(kvAt(resp, 1))
	var token int64
	if o := kvAt(resp, 1); o != nil {
		token = o.CreateRevision
	}
	if !resp.Succeeded {
		s.log.Info("machine number already quarantined", "machine", machine, "region", s.region, "holder", ov.Holder, "token", token)
		return nil
	}
	s.log.Warn("quarantined machine number: it can be neither claimed nor renewed", "machine", machine, "region", s.region,
		"holder", ov.Holder, "token", token)
	return nil
}

// Unquarantine deletes a number's quarantine key, making it claimable
// again. It returns lease.ErrNotHeld if the number is not quarantined.
func (s *Store) Unquarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	quar := s.keys.quarantine(machine)
	resp, err := s.txn(ctx,
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(quar), ">", 0)},
		[]clientv3.Op{clientv3.OpDelete(quar)}, nil)
	if err != nil {
		return fmt.Errorf("etcdstore: unquarantine machine %d: %w; check with Get whether it took effect", machine, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: machine %d region %d is not quarantined, so there is nothing to undo", lease.ErrNotHeld, machine, s.region)
	}
	s.log.Warn("unquarantined machine number: it can be claimed again", "machine", machine, "region", s.region)
	return nil
}
