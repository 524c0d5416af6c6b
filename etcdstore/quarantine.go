package etcdstore

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// quarantineTries bounds Quarantine's attempts when the holder changes
// between its read and its transaction.
const quarantineTries = 5

// Quarantine makes a number unclaimable and unrenewable by writing its
// quarantine key. A current holder is not evicted: its next Extend fails
// with lease.ErrQuarantined and it stops at the mark it had reserved. The
// same transaction, compared on the owner and mark keys as read just
// before, ends the holder's journal entry as quarantined at that mark,
// unless a write ended it already. Quarantining a quarantined number changes nothing and is not an
// error.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	quar, owner, markKey := s.keys.quarantine(machine), s.keys.owner(machine), s.keys.mark(machine)
	read, err := s.txn(ctx, nil, []clientv3.Op{clientv3.OpGet(owner), clientv3.OpGet(markKey)}, nil)
	if err != nil {
		return fmt.Errorf("etcdstore: quarantine machine %d: read its holder: %w", machine, err)
	}
	o, mark := kvAt(read, 0), kvAt(read, 1)
	for attempt := 1; ; attempt++ {
		then := []clientv3.Op{clientv3.OpPut(quar, encode(quarantineValue{QuarantinedAtMs: time.Now().UnixMilli()}))}
		token := createRev(o)
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(quar), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(owner), "=", token),
		}
		if o != nil {
			// The holder stops at the mark it holds now: the entry ends
			// there, exactly, so a later raise of the mark does not
			// stretch it.
			mv, err := parseMark(mark)
			if err != nil {
				return err
			}
			cmps = append(cmps, unchanged(markKey, mark)...)
			then = append(then, s.endOp(machine, claimID(clientv3.LeaseID(o.Lease)), token, true,
				endValue{End: lease.EndQuarantined, EndMs: mv.MarkMs, EndedMs: s.nowMs()}))
		}
		resp, err := s.txn(ctx, cmps, then,
			[]clientv3.Op{clientv3.OpGet(owner), clientv3.OpGet(quar, clientv3.WithKeysOnly()), clientv3.OpGet(markKey)})
		if err != nil {
			return fmt.Errorf("etcdstore: quarantine machine %d: %w; check with Get whether it took effect", machine, err)
		}
		ov, _ := parseOwner(o)
		if resp.Succeeded {
			s.log.Warn("quarantined machine number: it can be neither claimed nor renewed", "machine", machine, "region", s.region,
				"holder", ov.Holder, "token", token)
			return nil
		}
		o, mark = kvAt(resp, 0), kvAt(resp, 2)
		if kvAt(resp, 1) != nil {
			ov, _ = parseOwner(o)
			s.log.Info("machine number already quarantined", "machine", machine, "region", s.region, "holder", ov.Holder, "token", createRev(o))
			return nil
		}
		if attempt >= quarantineTries {
			return fmt.Errorf("etcdstore: quarantine machine %d: its holder or mark kept changing under %d attempts; retry", machine, quarantineTries)
		}
	}
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
