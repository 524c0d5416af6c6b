package etcdstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// cutover is a schedule other than the default, for the tests.
const cutover = "v1,v2@2036-01-01T00:00:00Z"

// TestScheduleKeySharedByRegions: the fleet schedule lives in one key,
// <prefix>/schedule, read by the stores of every region under the prefix:
// a schedule set through region 0 refuses a region-1 claim that brings
// another.
func TestScheduleKeySharedByRegions(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	prefix := prefixFor(t)
	r0 := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	r1 := newStore(t, cli, etcdstore.Config{Prefix: prefix, Region: 1})
	set, err := r0.SetFleetSchedule(ctxFor(t), 0, cutover)
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := r1.FleetSchedule(ctxFor(t)); err != nil || fs != set {
		t.Errorf("region 1 reads the fleet schedule %+v, %v; want %+v", fs, err, set)
	}
	resp, err := cli.Get(ctxFor(t), prefix+"/schedule")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Fatalf("key %s/schedule: %v, %v; want it at version 1", prefix, resp.Kvs, err)
	}
	t.Logf("%s = %s", resp.Kvs[0].Key, resp.Kvs[0].Value)
	if _, err := r1.Claim(ctxFor(t), req("default", 0, 0, baseMs())); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("region-1 claim with the default schedule: %v, want ErrSchedule", err)
	} else {
		t.Logf("claimer sees: %v", err)
	}
	r := req("new", 0, 0, baseMs())
	r.Schedule = cutover
	if l := leasetest.MustClaim(t, r1, r); l.Schedule != cutover {
		t.Errorf("lease carries %q, want %q", l.Schedule, cutover)
	}
	if _, err := r0.SetFleetSchedule(ctxFor(t), 0, "v1"); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("SetFleetSchedule at a stale version: %v, want ErrConflict", err)
	}
	if _, err := r0.SetFleetSchedule(ctxFor(t), 1, "no such schedule"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("SetFleetSchedule of text that does not parse: %v, want ErrInvalid", err)
	}
}

// TestScheduleRewrittenSameKeepsLeases: the fleet schedule key written
// again with the same schedule in other bytes (another set_at_ms, another
// writer's formatting) leaves leases claimed under it renewable: Extend's
// compare fails, it re-reads the key, finds the same schedule and retries.
func TestScheduleRewrittenSameKeepsLeases(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	prefix := prefixFor(t)
	s := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	if _, err := s.SetFleetSchedule(ctxFor(t), 0, cutover); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	r := req("h", 0, 0, now)
	r.Schedule = cutover
	l := mustExtend(t, s, leasetest.MustClaim(t, s, r), now+1000)
	if _, err := cli.Put(ctxFor(t), prefix+"/schedule", `{ "schedule": "`+cutover+`", "set_at_ms": 1 }`); err != nil {
		t.Fatal(err)
	}
	if fs, err := s.FleetSchedule(ctxFor(t)); err != nil || fs.Text != cutover || fs.Version != 2 {
		t.Fatalf("FleetSchedule after the rewrite = %+v, %v; want %q at version 2", fs, err, cutover)
	}
	if got := mustExtend(t, s, l, now+2000); got.MarkMs != now+2000 {
		t.Errorf("Extend after the same schedule was written again: mark %d, want %d", got.MarkMs, now+2000)
	}
}

// TestScheduleCheckedForHandedOverLease: a lease extended through another
// Store value than the one that claimed it (as after a hand-over) is
// compared with the fleet schedule too, and can still be released.
func TestScheduleCheckedForHandedOverLease(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	prefix := prefixFor(t)
	s := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 0, 0, now)), now+1000)
	if _, err := s.SetFleetSchedule(ctxFor(t), 0, cutover); err != nil {
		t.Fatal(err)
	}
	other := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	past := time.Date(2036, 1, 1, 0, 0, 1, 0, time.UTC).UnixMilli()
	if _, err := other.Extend(ctxFor(t), l, past, 10*time.Second); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Extend past the cutover through another store after the schedule changed: %v, want ErrSchedule", err)
	}
	mustExtend(t, other, l, now+2000) // below the cutover the two schedules agree
	if err := other.Release(ctxFor(t), l, now+1000); err != nil {
		t.Errorf("Release of the refused lease: %v, want it released", err)
	}
}

// TestScheduleSetAtOnceOnUnusedStore: on a store where no lease record was
// ever written (no key of any keyspace under the prefix, no journal
// entry), a change of the fleet schedule applies at once — the notice
// protects holders and marks, and there are none — and the write itself
// checks that none exists (SetFleetScheduleUnused), so a claim that
// commits first is never overwritten. With a record anywhere under the
// prefix — a holder, a released number's mark, a quarantine, in any
// keyspace, even one neither schedule's holders lease in — the notice
// rule stands, and its refusal says what exists and how many.
func TestScheduleSetAtOnceOnUnusedStore(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	now := time.Now()

	fresh := newStore(t, cli, etcdstore.Config{Prefix: prefixFor(t) + "/fresh"})
	set, err := lease.SetSchedule(ctxFor(t), fresh, "v2", now, 0)
	if err != nil || set != (lease.FleetSchedule{Text: "v2", Version: 1}) {
		t.Fatalf("v2 on a store with no lease record: %+v, %v; want it set at once at version 1", set, err)
	}
	r := req("v2 holder", 0, 0, baseMs())
	r.Schedule = "v2"
	leasetest.MustClaim(t, fresh, r)
	if _, err := lease.SetSchedule(ctxFor(t), fresh, "v1", now, 0); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "1 holder") {
		t.Errorf("back to v1 with a holder: %v; want ErrInvalid naming 1 holder", err)
	} else {
		t.Logf("refused: %v", err)
	}

	// The write checks, not only the read before it: a record made
	// after the read refuses it.
	racy := newStore(t, cli, etcdstore.Config{Prefix: prefixFor(t) + "/racy"})
	leasetest.MustClaim(t, racy, req("v1 holder", 3, 3, baseMs()))
	if _, err := racy.SetFleetScheduleUnused(ctxFor(t), 0, "v2"); !errors.Is(err, lease.ErrInUse) {
		t.Errorf("SetFleetScheduleUnused with a holder: %v, want ErrInUse", err)
	}
	if fs, err := racy.FleetSchedule(ctxFor(t)); err != nil || fs.Version != 0 {
		t.Errorf("after the refusal the schedule is %+v, %v; want it never set", fs, err)
	}

	for _, c := range []struct {
		name   string
		region int
		make   func(s *etcdstore.Store)
		says   string
	}{
		{"a released number's mark", 0, func(s *etcdstore.Store) {
			l := leasetest.MustClaim(t, s, req("gone", 7, 7, baseMs()))
			l = mustExtend(t, s, l, baseMs()+1000)
			if err := s.Release(ctxFor(t), l, l.MarkMs); err != nil {
				t.Fatal(err)
			}
		}, "1 mark"},
		{"a quarantine", 2, func(s *etcdstore.Store) {
			if err := s.Quarantine(ctxFor(t), 9); err != nil {
				t.Fatal(err)
			}
		}, "1 quarantined"},
		{"a record in a keyspace no schedule leases in", 1000, func(s *etcdstore.Store) {
			if _, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 1, Hi: 1}, baseMs()+1000); err != nil {
				t.Fatal(err)
			}
		}, "keys of lease records"},
	} {
		s := newStore(t, cli, etcdstore.Config{Prefix: prefixFor(t) + "/" + strings.ReplaceAll(c.name, " ", "-"), Region: c.region})
		c.make(s)
		_, err := lease.SetSchedule(ctxFor(t), s, "v2", now, 0)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want the notice rule's refusal naming %q", c.name, err, c.says)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
		if fs, err := s.FleetSchedule(ctxFor(t)); err != nil || fs.Version != 0 {
			t.Errorf("%s: the schedule is %+v, %v; want it never set", c.name, fs, err)
		}
	}
}

// TestRawKey: the raw keys a region's store names for a number are the
// keys its record lives under: after a claim, an extension and a
// release in region 2, the mark key RawKey names holds the mark, and
// region 0's store names other keys.
func TestRawKey(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	prefix := prefixFor(t)
	r2 := newStore(t, cli, etcdstore.Config{Prefix: prefix, Region: 2})
	l := leasetest.MustClaim(t, r2, req("a", 170, 170, baseMs()))
	l = mustExtend(t, r2, l, baseMs()+1000)
	if err := r2.Release(ctxFor(t), l, l.MarkMs); err != nil {
		t.Fatal(err)
	}
	k, err := r2.RawKey(170)
	want := lease.RawKey{Store: "etcd", Keyspace: 2, Machine: 170, Key: prefix + "/2/mark/170",
		Keys: []string{prefix + "/2/owner/170", prefix + "/2/mark/170", prefix + "/2/quarantine/170"}}
	if err != nil || k.Key != want.Key || strings.Join(k.Keys, " ") != strings.Join(want.Keys, " ") || k.Store != want.Store || k.Keyspace != 2 || k.Machine != 170 {
		t.Fatalf("RawKey(170) in region 2: %+v, %v; want %+v", k, err, want)
	}
	resp, err := cli.Get(ctxFor(t), k.Key)
	if err != nil || len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), fmt.Sprint(l.MarkMs)) {
		t.Errorf("the key RawKey names, %s: %v, %v; want the released mark %d", k.Key, resp.Kvs, err, l.MarkMs)
	}
	r0 := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	if k0, _ := r0.RawKey(170); k0.Key == k.Key {
		t.Errorf("region 0 and region 2 name one key for number 170: %s", k.Key)
	}
}
