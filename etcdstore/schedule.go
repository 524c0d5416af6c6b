package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// scheduleValue is the value of the fleet schedule's key <prefix>/schedule
// (docs/etcd-keys.md). Its version is the key's etcd version: 0 while the
// key was never written, +1 on every put.
type scheduleValue struct {
	Schedule string `json:"schedule"`
	SetAtMs  int64  `json:"set_at_ms"`
}

// FleetSchedule returns the fleet schedule kept under <prefix>/schedule,
// shared by every region of the prefix: lease.DefaultFleetSchedule at
// version 0 if it was never set.
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	resp, err := s.get(ctx, s.keys.schedule)
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("etcdstore: read the fleet schedule %s: %w", s.keys.schedule, err)
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	return parseSchedule(kv)
}

// SetFleetSchedule writes text, in its canonical form, as the fleet
// schedule, in a transaction that succeeds only if the key's etcd version
// is still prev (0: never set). It returns the schedule at version prev+1,
// or lease.ErrConflict, with the version found, if it moved. Use
// lease.SetSchedule, which refuses to move instants already past or near.
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	canon, err := s.scheduleToSet(prev, text)
	if err != nil {
		return lease.FleetSchedule{}, err
	}
	key := s.keys.schedule
	resp, err := s.txn(ctx,
		[]clientv3.Cmp{clientv3.Compare(clientv3.Version(key), "=", prev)},
		[]clientv3.Op{clientv3.OpPut(key, encode(scheduleValue{Schedule: canon, SetAtMs: time.Now().UnixMilli()}))},
		[]clientv3.Op{clientv3.OpGet(key)})
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("etcdstore: set the fleet schedule to %q: %w; it may have committed: read it back with FleetSchedule", canon, err)
	}
	if !resp.Succeeded {
		var found int64
		if kv := kvAt(resp, 0); kv != nil {
			found = kv.Version
		}
		return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is at version %d, not %d; read it again and retry",
			lease.ErrConflict, found, prev)
	}
	s.log.Warn("set the fleet schedule", "schedule", canon, "version", prev+1, "key", key)
	return lease.FleetSchedule{Text: canon, Version: prev + 1}, nil
}

// parseSchedule decodes the schedule key; nil is the default at version 0.
func parseSchedule(kv *mvccpb.KeyValue) (lease.FleetSchedule, error) {
	if kv == nil {
		return lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, nil
	}
	var v scheduleValue
	if err := json.Unmarshal(kv.Value, &v); err != nil || v.Schedule == "" {
		return lease.FleetSchedule{}, fmt.Errorf("etcdstore: key %s holds %q, not a fleet schedule record (was it written by hand?); "+
			"write it with \"snowfence schedule set\"", kv.Key, kv.Value)
	}
	return lease.FleetSchedule{Text: v.Schedule, Version: kv.Version}, nil
}

// checkScheduleKV returns lease.ErrSchedule unless the holder's schedule
// (canonical text) equals the fleet schedule in kv (the schedule key as
// read, nil if absent).
func checkScheduleKV(holder string, kv *mvccpb.KeyValue) error {
	fleet, err := parseSchedule(kv)
	if err != nil {
		return err
	}
	return lease.CheckSchedule(holder, fleet)
}

// checkRegistryKV returns lease.ErrSchedule (lease.CheckRecordedSchedule)
// when the region registry in reg (the registry key as read, nil if
// absent) records a fleet schedule other than the record in sched (the
// schedule key as read, nil if absent).
func checkRegistryKV(sched, reg *mvccpb.KeyValue) error {
	fleet, err := parseSchedule(sched)
	if err != nil {
		return err
	}
	r, err := parseRegistry(reg)
	if err != nil {
		return err
	}
	return lease.CheckRecordedSchedule(r, fleet)
}

// checkExtensionKV returns lease.ErrSchedule unless a lease claimed under
// the holder's schedule may reserve up to markMs under the fleet schedule in
// kv (nil if absent): see lease.CheckExtension.
func checkExtensionKV(holder string, kv *mvccpb.KeyValue, markMs int64) error {
	fleet, err := parseSchedule(kv)
	if err != nil {
		return err
	}
	return lease.CheckExtension(holder, fleet, markMs)
}

// scheduleGuard is the compare that keeps a claim or an extension from
// committing once the fleet schedule differs from the one it was checked
// against — or a claim once the region registry's copy differs from the one
// it was checked against: the key still absent, or its value byte for byte
// the one read.
type scheduleGuard struct {
	present bool
	value   string
	version int64 // the key's etcd version as read, for messages
}

// guardOf is the guard for the schedule key as read (nil if absent).
func guardOf(kv *mvccpb.KeyValue) scheduleGuard {
	if kv == nil {
		return scheduleGuard{}
	}
	return scheduleGuard{present: true, value: string(kv.Value), version: kv.Version}
}

// cmp is the transaction compare for the guard on key.
func (g scheduleGuard) cmp(key string) clientv3.Cmp {
	if !g.present {
		return clientv3.Compare(clientv3.Version(key), "=", 0)
	}
	return clientv3.Compare(clientv3.Value(key), "=", g.value)
}

// allows returns lease.ErrSchedule unless a lease claimed under the
// holder's schedule may reserve up to markMs under the fleet schedule the
// guard holds (lease.CheckExtension).
func (g scheduleGuard) allows(holder string, markMs int64) error {
	var kv *mvccpb.KeyValue
	if g.present {
		kv = &mvccpb.KeyValue{Key: []byte("schedule"), Value: []byte(g.value), Version: g.version}
	}
	return checkExtensionKV(holder, kv, markMs)
}

// holds reports whether kv (as read) still passes the guard.
func (g scheduleGuard) holds(kv *mvccpb.KeyValue) bool {
	if kv == nil {
		return !g.present
	}
	return g.present && string(kv.Value) == g.value
}

// SetFleetScheduleUnused is SetFleetSchedule made only while the store
// holds no lease record at all (lease.UnusedScheduleSetter), checked in the
// same transaction: besides the schedule key's version, it compares that
// no key exists under any keyspace of the prefix — <prefix>/<keyspace>/…,
// the owner, mark and quarantine keys of every region and layout step (the
// range from <prefix>/0 up to <prefix>/:, since a keyspace segment is
// digits) — nor under the journal, <prefix>/journal/ (every claim writes
// an entry there in its own transaction, and an entry outlives an owner
// key whose etcd lease expired before any mark was written). Every claim
// compares the schedule key in its transaction and writes an owner key and
// an entry, so of a claim and this write, whichever commits second sees
// the other: a claim after it is refused under the old schedule, and this
// write after a claim returns lease.ErrInUse, with how many keys it found.
func (s *Store) SetFleetScheduleUnused(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	canon, err := s.scheduleToSet(prev, text)
	if err != nil {
		return lease.FleetSchedule{}, err
	}
	key := s.keys.schedule
	prefix := strings.TrimSuffix(key, "schedule")
	from, to, journal := prefix+"0", prefix+":", prefix+"journal/"
	resp, err := s.txn(ctx,
		append([]clientv3.Cmp{clientv3.Compare(clientv3.Version(key), "=", prev)}, unusedCompares(from, to, journal)...),
		[]clientv3.Op{clientv3.OpPut(key, encode(scheduleValue{Schedule: canon, SetAtMs: time.Now().UnixMilli()}))},
		[]clientv3.Op{clientv3.OpGet(key), clientv3.OpGet(from, clientv3.WithRange(to), clientv3.WithCountOnly()),
			clientv3.OpGet(journal, clientv3.WithPrefix(), clientv3.WithCountOnly())})
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("etcdstore: set the fleet schedule to %q: %w; it may have committed: read it back with FleetSchedule", canon, err)
	}
	if !resp.Succeeded {
		var found int64
		if kv := kvAt(resp, 0); kv != nil {
			found = kv.Version
		}
		if found != prev {
			return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is at version %d, not %d; read it again and retry",
				lease.ErrConflict, found, prev)
		}
		keys, entries := resp.Responses[1].GetResponseRange().Count, resp.Responses[2].GetResponseRange().Count
		return lease.FleetSchedule{}, fmt.Errorf("%w: %d keys of lease records (owner, mark and quarantine keys under %s<keyspace>/) and %d journal entries (under %s) exist: "+
			"the fleet schedule changes at once only on a store that holds none; give the notice (a cutover at least 1 h past every clock and mark)",
			lease.ErrInUse, keys, prefix, entries, journal)
	}
	s.log.Warn("set the fleet schedule on a store holding no lease record", "schedule", canon, "version", prev+1, "key", key)
	return lease.FleetSchedule{Text: canon, Version: prev + 1}, nil
}

// scheduleToSet checks a fleet-schedule write's arguments, for
// SetFleetSchedule and SetFleetScheduleUnused: the store open, prev a
// version (0: never set), text a schedule; it returns text's canonical
// form.
func (s *Store) scheduleToSet(prev int64, text string) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	if prev < 0 {
		return "", fmt.Errorf("%w: fleet schedule version %d is negative", lease.ErrInvalid, prev)
	}
	canon, err := lease.CanonicalSchedule(text)
	if err != nil {
		return "", fmt.Errorf("%w: fleet schedule %q: %v", lease.ErrInvalid, text, err)
	}
	return canon, nil
}
