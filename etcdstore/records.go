package etcdstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// Get returns the record of one number, read in one linearizable
// transaction: holder and token from the owner key, the mark, and whether
// it is quarantined. ExpiresMs comes from the etcd lease's remaining TTL
// (whole seconds, so up to a second early), zero if that lookup fails. A
// number with no keys gives a zero record, not an error.
func (s *Store) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := s.open(); err != nil {
		return lease.Record{}, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return lease.Record{}, err
	}
	resp, err := s.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(s.keys.owner(machine)), clientv3.OpGet(s.keys.mark(machine)), clientv3.OpGet(s.keys.quarantine(machine)),
	}, nil)
	if err != nil {
		return lease.Record{}, fmt.Errorf("etcdstore: read machine %d: %w", machine, err)
	}
	rec := lease.Record{Machine: machine, Region: s.region}
	if err := s.fill(ctx, &rec, kvAt(resp, 0), kvAt(resp, 1), kvAt(resp, 2)); err != nil {
		return lease.Record{}, err
	}
	return rec, nil
}

// List returns the record of every number of the region that has any key,
// in order of number, from one linearizable read (expiry times are looked
// up after it, one etcd lease at a time).
func (s *Store) List(ctx context.Context) ([]lease.Record, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	resp, err := s.get(ctx, s.keys.base, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcdstore: list region %d: %w", s.region, err)
	}
	type keys struct{ owner, mark, quarantine *mvccpb.KeyValue }
	byNum := make(map[int]*keys)
	for _, kv := range resp.Kvs {
		kind, n, ok := s.keys.parse(string(kv.Key))
		if !ok {
			continue
		}
		k := byNum[n]
		if k == nil {
			k = &keys{}
			byNum[n] = k
		}
		switch kind {
		case kindOwner:
			k.owner = kv
		case kindMark:
			k.mark = kv
		case kindQuarantine:
			k.quarantine = kv
		}
	}
	nums := make([]int, 0, len(byNum))
	for n := range byNum {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	recs := make([]lease.Record, 0, len(nums))
	for _, n := range nums {
		k := byNum[n]
		rec := lease.Record{Machine: n, Region: s.region}
		if err := s.fill(ctx, &rec, k.owner, k.mark, k.quarantine); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// fill completes a record from its keys.
func (s *Store) fill(ctx context.Context, rec *lease.Record, owner, mark, quarantine *mvccpb.KeyValue) error {
	mv, err := parseMark(mark)
	if err != nil {
		return err
	}
	rec.MarkMs = mv.MarkMs
	rec.Quarantined = quarantine != nil
	if owner == nil {
		return nil
	}
	ov, err := parseOwner(owner)
	if err != nil {
		return err
	}
	rec.Holder, rec.Token = ov.Holder, uint64(owner.CreateRevision)
	if mv.Token == rec.Token {
		rec.Renewal = mv.Renewal // the holder's last extension's
	}
	if owner.Lease != 0 {
		rec.Claim = claimID(clientv3.LeaseID(owner.Lease))
		if ttl, err := s.cli.TimeToLive(ctx, clientv3.LeaseID(owner.Lease)); err == nil && ttl.TTL >= 0 {
			rec.ExpiresMs = time.Now().Add(time.Duration(ttl.TTL) * time.Second).UnixMilli()
		}
	}
	return nil
}

// claimID is the Claim of a lease (lease.Lease.Claim) whose owner key is
// bound to etcd lease id: each claim grants its own etcd lease.
func claimID(id clientv3.LeaseID) string { return fmt.Sprintf("%x", int64(id)) }
