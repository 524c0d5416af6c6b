package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// Claim takes a free number in req.Range: not held, not quarantined, not in
// req.Exclude, and with a mark at most req.MaxAhead ahead of req.NowMs.
// Numbers whose mark is behind req.NowMs come first, starting from a random
// number in the range so holders starting together spread out; then the
// others, lowest mark first.
//
// For each candidate it reads the number's mark and journal keys, grants
// an etcd lease of req.LeaseFor (rounded up to whole seconds, at least
// 1 s) and claims the number with a transaction that puts the owner key
// only if neither the owner nor the quarantine key exists and the mark key
// and the number's journal are as read. The same transaction writes the
// claim's journal entry (History) and drops the number's oldest entries
// beyond lease.JournalRetention. The fencing token is the transaction's
// revision, which is the owner key's and the entry key's create revision.
// StartMs is max(stored mark, req.NowMs) — and, once this store has seen
// etcd go back in time, at least the restore window (req.RestoreWindow,
// else Config.RestoreMargin) after the moment it noticed, on the
// claimer's clock; that floor is not held against MaxAhead. A number whose
// stored mark is too far ahead is passed over, unclaimed. A number whose
// mark or journal moved since the read is claimed again on what the
// failed transaction read, a few times, then counted as taken; one whose
// claim raced a restore noticed meanwhile is given back, entry and all,
// and claimed once more with the restore window.
//
// The fleet schedule (<prefix>/schedule) is read with the range, and the
// claim refused with lease.ErrSchedule unless req.Schedule equals it; the
// claim transaction also compares the schedule key with the value read,
// so a schedule set meanwhile is never missed. The lease carries
// req.Schedule in canonical form. The region registry's copy
// (<prefix>/registry) is read with them, and the claim refused with
// lease.ErrSchedule when the registry records a fleet schedule other than
// the record's (lease.CheckRecordedSchedule); the transaction compares the
// registry key with the value read too, so a registry written meanwhile is
// checked again before the claim can commit.
//
// After an error of unknown outcome it re-reads the owner key and the
// claim's journal entry: a claim that committed (the key is bound to this
// claim's etcd lease, and the entry, written with it, is there) is
// adopted; one that did not, or cannot be told, has its etcd lease
// revoked, which undoes it if it committed after all (leaving at most an
// entry that covers no timestamp: the mark is unchanged, at or below its
// start), and the error is returned.
//
// It returns lease.ErrNoFreeNumber, saying why each number was passed over,
// when no number can be claimed.
func (s *Store) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	req, err := req.Check(lease.Unlimited)
	if err != nil {
		return nil, err
	}
	// The marks this store knows as of before the read (its own leases',
	// and every one its claims read): one found gone, gone back or created
	// anew means etcd went back in time.
	// Other keyspaces whose marks are known (a number of an earlier layout,
	// released at a cutover, say) are read too: their marks are as good a
	// sign.
	epoch, revs, foreign := s.knownMarks()
	ops := []clientv3.Op{clientv3.OpGet(s.keys.base, clientv3.WithPrefix()), clientv3.OpGet(s.keys.schedule)}
	bases := slices.Sorted(maps.Keys(foreign))
	for _, b := range bases {
		ops = append(ops, clientv3.OpGet(b+kindMark+"/", clientv3.WithPrefix()))
	}
	regAt := len(ops)
	ops = append(ops, clientv3.OpGet(s.keys.registry))
	resp, err := s.txn(ctx, nil, ops, nil)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: claim in %s: read the range: %w", req.Range, err)
	}
	rangeAt := func(i int) []*mvccpb.KeyValue { return rangeKvs(resp, i) }
	kvs := rangeAt(0)
	s.compareMarks(epoch, revs, kvs, bases, foreign, resp)
	sched, reg := guardOf(kvAt(resp, 1)), guardOf(kvAt(resp, regAt))
	if err := checkClaimSchedule(req.Schedule, kvAt(resp, 1)); err != nil {
		return nil, err
	}
	if err := checkClaimRegistry(kvAt(resp, 1), kvAt(resp, regAt)); err != nil {
		return nil, err
	}
	cands, skipped, err := s.candidates(req, kvs)
	if err != nil {
		return nil, err
	}
	for _, n := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("etcdstore: claim in %s: %w", req.Range, err)
		}
		l, why, err := s.tryClaim(ctx, req, n, &sched, &reg)
		if why == skipRestored && err == nil && l == nil {
			l, why, err = s.tryClaim(ctx, req, n, &sched, &reg) // once more, with the restore window
		}
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			return l, nil
		}
		skipped.add(why)
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; %s", lease.ErrNoFreeNumber, req.Range, s.region, skipped,
		lease.NoFreeAdvice(req, skipped.ahead, skipped.others(), "widen the range, release or unquarantine numbers, or wait for marks to pass"))
}

// slotState is what one read of the region says about a number.
type slotState struct {
	held, quarantined bool
	markMs            int64
}

// candidates orders the numbers of req.Range worth trying, from one
// snapshot of the region's keys, and counts the others by reason.
func (s *Store) candidates(req lease.ClaimRequest, kvs []*mvccpb.KeyValue) ([]int, *skips, error) {
	states := make(map[int]*slotState)
	for _, kv := range kvs {
		kind, n, ok := s.keys.parse(string(kv.Key))
		if !ok || !req.Range.Contains(n) {
			continue
		}
		st := states[n]
		if st == nil {
			st = &slotState{}
			states[n] = st
		}
		switch kind {
		case kindOwner:
			st.held = true
		case kindQuarantine:
			st.quarantined = true
		case kindMark:
			mv, err := parseMark(kv)
			if err != nil {
				return nil, nil, err
			}
			st.markMs = mv.MarkMs
		}
	}
	sk := &skips{}
	var behind, ahead []int
	size := req.Range.Size()
	start := rand.IntN(size)
	for i := range size {
		n := req.Range.Lo + (start+i)%size
		st := states[n]
		if st == nil {
			st = &slotState{}
		}
		switch {
		case slices.Contains(req.Exclude, n):
			sk.excluded++
		case st.quarantined:
			sk.quarantined++
		case st.held:
			sk.held++
		case st.markMs <= req.NowMs:
			behind = append(behind, n)
		case tooFar(st.markMs, req):
			sk.ahead.Add(st.markMs)
		default:
			ahead = append(ahead, n)
		}
	}
	slices.SortStableFunc(ahead, func(a, b int) int {
		ma, mb := states[a].markMs, states[b].markMs
		switch {
		case ma < mb:
			return -1
		case ma > mb:
			return 1
		}
		return 0
	})
	return append(behind, ahead...), sk, nil
}

// tooFar reports whether a lease starting at startMs would make the
// claimer wait longer than req.MaxAhead. It compares in milliseconds: a
// mark centuries ahead (an operator's typo, say) overflows a Duration.
func tooFar(startMs int64, req lease.ClaimRequest) bool {
	return startMs-req.NowMs > req.MaxAhead.Milliseconds()
}

// skip reasons returned by tryClaim.
type skipReason int

const (
	skipTaken    skipReason = iota // held or quarantined by the time of the claim
	skipAhead                      // mark too far ahead
	skipRestored                   // given back: a restore noticed meanwhile raised its start
)

// skips counts the numbers passed over, by reason.
type skips struct {
	held, quarantined, excluded, taken, restored int
	ahead                                        lease.Ahead
}

// others is how many numbers were passed over for another reason than
// their marks.
func (sk *skips) others() int {
	return sk.held + sk.quarantined + sk.excluded + sk.taken + sk.restored
}

func (sk *skips) add(why skipReason) {
	switch why {
	case skipTaken:
		sk.taken++
	case skipAhead:
		sk.ahead.Add(0) // its mark, read at the claim, is not kept
	case skipRestored:
		sk.restored++
	}
}

func (sk *skips) String() string {
	return fmt.Sprintf("%d held, %d quarantined, %d excluded, %d with a mark more than MaxAhead ahead of the claimer's clock, %d taken while claiming, "+
		"%d given back twice for a restore noticed while claiming", sk.held, sk.quarantined, sk.excluded, sk.ahead.N, sk.taken, sk.restored)
}

// ttlSeconds is an etcd lease TTL for d: whole seconds, rounded up, at
// least 1.
func ttlSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// scheduleTries bounds the claim attempts on one number whose fleet
// schedule key was rewritten, with the same schedule, under it.
const scheduleTries = 3

// moveTries bounds the claim attempts on one free number whose mark or
// journal moved between the read and the claim transaction.
const moveTries = 3

// claimRead is what a claim of one number read before its transaction:
// the mark key, the number's journal keys (keys only), and the revision
// of that read. The transaction compares both unchanged, so the journal
// entry it writes names the mark the claim took over, and the entries it
// drops are the oldest.
type claimRead struct {
	mark    *mvccpb.KeyValue
	journal []*mvccpb.KeyValue
	rev     int64
}

// readForClaim reads the mark and the journal keys of number n.
func (s *Store) readForClaim(ctx context.Context, n int) (claimRead, error) {
	resp, err := s.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(s.keys.mark(n)),
		clientv3.OpGet(s.keys.journalOf(n), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return claimRead{}, fmt.Errorf("etcdstore: claim machine %d: read its mark and journal: %w", n, err)
	}
	return claimRead{mark: kvAt(resp, 0), journal: rangeKvs(resp, 1), rev: resp.Header.Revision}, nil
}

// tryClaim claims number n, with the fleet schedule as sched guards it
// (updated when the key was rewritten with the same schedule) and the
// region registry's copy as reg guards it (updated when it was rewritten
// with a schedule that still agrees with the record). It returns
// the lease, or a reason to try the next number, or an error that ends the
// claim.
//
// It reads n's mark and journal first, and decides the lease's start from
// that mark; the claim transaction writes the journal entry, with that
// mark and start, and commits only if the mark key and the journal are as
// read — so the entry's PrevMarkMs is the mark in force when the number
// was taken, and its token (the entry key's create revision) the owner
// key's. A number whose mark is too far ahead is passed over before it is
// claimed, leaving no entry.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, n int, sched, reg *scheduleGuard) (*lease.Lease, skipReason, error) {
	rd, err := s.readForClaim(ctx, n)
	if err != nil {
		return nil, 0, err
	}
	if mv, err := parseMark(rd.mark); err != nil || tooFar(max(mv.MarkMs, req.NowMs), req) {
		if err == nil {
			s.passOver(req, n, mv)
		}
		return nil, skipAhead, err
	}
	grant, err := s.cli.Grant(ctx, ttlSeconds(req.LeaseFor))
	if err != nil {
		return nil, 0, fmt.Errorf("etcdstore: claim machine %d: grant an etcd lease: %w", n, err)
	}
	id := grant.ID
	owner, quar, markKey, entry := s.keys.owner(n), s.keys.quarantine(n), s.keys.mark(n), s.keys.entry(n, claimID(id))
	var resp *clientv3.TxnResponse
	var mv markValue
	var startMs int64
	for schedTry, moveTry := 0, 0; ; {
		mv, err = parseMark(rd.mark)
		if err != nil {
			s.revoke(ctx, id, n)
			return nil, 0, err
		}
		startMs = max(mv.MarkMs, req.NowMs)
		if tooFar(startMs, req) {
			s.passOver(req, n, mv)
			s.revoke(ctx, id, n)
			return nil, skipAhead, nil
		}
		startMs = max(startMs, s.claimFloorMs(req))
		drop, clash := s.keys.retire(n, claimID(id), rd.journal)
		if clash {
			s.revoke(ctx, id, n)
			return nil, 0, fmt.Errorf("etcdstore: claim machine %d: its journal already has an entry of etcd lease %s (an etcd lease ID repeated); retry",
				n, claimID(id))
		}
		cmps := append([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(owner), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(quar), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(s.keys.journalOf(n)), "<", rd.rev+1).WithPrefix(),
		}, unchanged(markKey, rd.mark)...) // the start is decided from this mark's value
		cmps = withScheduleGuard(cmps, *sched, s.keys.schedule)
		cmps = withRegistryGuard(cmps, *reg, s.keys.registry)
		then := append([]clientv3.Op{
			clientv3.OpPut(owner, encode(ownerValue{Holder: req.Holder, ClaimedAtMs: req.NowMs}), clientv3.WithLease(id)),
			clientv3.OpPut(entry, encode(entryValue{Holder: req.Holder, ClaimedMs: req.NowMs, PrevMarkMs: mv.MarkMs, StartMs: startMs})),
		}, drop...)
		resp, err = s.txn(ctx, cmps, then, []clientv3.Op{
			clientv3.OpGet(s.keys.schedule),
			clientv3.OpGet(owner, clientv3.WithKeysOnly()),
			clientv3.OpGet(quar, clientv3.WithKeysOnly()),
			clientv3.OpGet(markKey),
			clientv3.OpGet(s.keys.journalOf(n), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(s.keys.registry),
		})
		if err != nil || resp.Succeeded {
			break
		}
		sk := kvAt(resp, 0)
		switch {
		case !scheduleCompared() || kvAt(resp, 1) != nil || kvAt(resp, 2) != nil:
			s.revoke(ctx, id, n)
			return nil, skipTaken, nil // taken or quarantined
		case !sched.holds(sk):
			if err := checkScheduleKV(req.Schedule, sk); err != nil {
				s.revoke(ctx, id, n)
				return nil, 0, err
			}
			*sched = guardOf(sk) // rewritten with the same schedule
			if schedTry++; schedTry >= scheduleTries {
				s.revoke(ctx, id, n)
				return nil, 0, fmt.Errorf("etcdstore: claim machine %d: the fleet schedule key %s keeps changing under it; retry", n, s.keys.schedule)
			}
		case registryMoved(*reg, kvAt(resp, 5)):
			rk := kvAt(resp, 5)
			if err := checkRegistryKV(sk, rk); err != nil {
				s.revoke(ctx, id, n)
				return nil, 0, err
			}
			*reg = guardOf(rk) // rewritten, still recording the record's schedule (or none)
			if schedTry++; schedTry >= scheduleTries {
				s.revoke(ctx, id, n)
				return nil, 0, fmt.Errorf("etcdstore: claim machine %d: the region registry key %s keeps changing under it; retry", n, s.keys.registry)
			}
		default:
			// Free, but its mark or journal moved since the read (claimed
			// and given back meanwhile, or raised): claim on what this
			// response read, like a lost race after a few.
			if moveTry++; moveTry >= moveTries {
				s.revoke(ctx, id, n)
				return nil, skipTaken, nil
			}
		}
		rd = claimRead{mark: kvAt(resp, 3), journal: rangeKvs(resp, 4), rev: resp.Header.Revision}
	}
	var token uint64
	if err != nil {
		token, err = s.adopt(ctx, req, n, id, err)
		if err != nil {
			return nil, 0, err
		}
	} else {
		token = uint64(resp.Header.Revision)
	}
	if floor := s.claimFloorMs(req); floor > startMs {
		// A restore was noticed while the transaction was in flight (by
		// its own response, say): the start written in the entry misses
		// the restore window. Give the number back, entry and all, and let
		// the caller claim again with the window.
		s.log.Info("claim given back: a restore was noticed while it was made, so it must start later", "machine", n, "region", s.region,
			"holder", req.Holder, "token", token, "start", lease.FormatMs(startMs), "floor", lease.FormatMs(floor))
		s.undo(ctx, n, token, id)
		return nil, skipRestored, nil
	}
	// The lease belongs to the history as now known: if this very response
	// revealed a restore, the claim was made in the restored store.
	s.mu.Lock()
	h := &held{etcdLease: id, epoch: s.hist.epoch, markMs: mv.MarkMs, floorMs: mv.MarkMs, sched: *sched}
	s.setMarkRevLocked(h, n, modRev(rd.mark))
	s.leases[leaseKey{n, token}] = h
	s.mu.Unlock()
	l := &lease.Lease{Machine: n, Region: s.region, Holder: req.Holder, Token: token, StartMs: startMs, MarkMs: mv.MarkMs, Schedule: req.Schedule,
		Claim: claimID(id)}
	s.log.Info("claimed machine number", "machine", n, "region", s.region, "holder", req.Holder, "token", token,
		"mark", lease.FormatMs(mv.MarkMs), "start", lease.FormatMs(startMs), "schedule", req.Schedule, "etcd_lease", fmt.Sprintf("%x", int64(id)))
	return l, 0, nil
}

// passOver logs a number passed over because its mark is too far ahead.
func (s *Store) passOver(req lease.ClaimRequest, n int, mv markValue) {
	s.log.Info("number passed over: its mark is too far ahead of the claimer's clock", "machine", n, "region", s.region,
		"holder", req.Holder, "mark", lease.FormatMs(mv.MarkMs), "now", lease.FormatMs(req.NowMs), "max_ahead", req.MaxAhead)
}

// adopt decides a claim transaction that failed with cause: if the owner
// key is bound to this claim's etcd lease the claim committed, and with it
// its journal entry (same transaction, same create revision): its token is
// returned. Otherwise the etcd lease is revoked (undoing a claim that
// commits late) and an error returned.
func (s *Store) adopt(ctx context.Context, req lease.ClaimRequest, n int, id clientv3.LeaseID, cause error) (uint64, error) {
	rctx, cancel := s.detached(ctx)
	defer cancel()
	resp, err := s.txn(rctx, nil, []clientv3.Op{
		clientv3.OpGet(s.keys.owner(n)), clientv3.OpGet(s.keys.entry(n, claimID(id)), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		s.revoke(ctx, id, n)
		return 0, fmt.Errorf("etcdstore: claim machine %d: %w; re-reading it failed too (%v), so its etcd lease was revoked, "+
			"which undoes the claim if it committed; retry", n, cause, err)
	}
	o, e := kvAt(resp, 0), kvAt(resp, 1)
	if o == nil || clientv3.LeaseID(o.Lease) != id {
		s.revoke(ctx, id, n)
		return 0, fmt.Errorf("etcdstore: claim machine %d: %w; the store shows it did not commit; retry", n, cause)
	}
	if ov, err := parseOwner(o); err != nil || ov.Holder != req.Holder {
		s.revoke(ctx, id, n)
		return 0, errors.Join(fmt.Errorf("etcdstore: claim machine %d: %w; the owner key on this claim's etcd lease names another holder", n, cause), err)
	}
	if e == nil || e.CreateRevision != o.CreateRevision {
		s.undo(ctx, n, uint64(o.CreateRevision), id)
		return 0, fmt.Errorf("etcdstore: claim machine %d: %w; the owner key is this claim's but its journal entry %s is not "+
			"(was it deleted by hand?), so the claim was undone; retry", n, cause, s.keys.entry(n, claimID(id)))
	}
	s.log.Info("claim adopted after an error of unknown outcome: the store shows it committed", "machine", n, "region", s.region,
		"holder", req.Holder, "token", o.CreateRevision, "error", cause)
	return uint64(o.CreateRevision), nil
}

// undo gives back a number just claimed and not used: it deletes the owner
// key and the claim's journal entry if the owner key is still this
// claim's, then revokes the etcd lease. If the delete fails, the entry
// stays, with the mark unchanged at or below its start: an empty interval,
// like a holder's that died before renewing.
func (s *Store) undo(ctx context.Context, n int, token uint64, id clientv3.LeaseID) {
	dctx, cancel := s.detached(ctx)
	defer cancel()
	owner, entry := s.keys.owner(n), s.keys.entry(n, claimID(id))
	if _, err := s.txn(dctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(owner), "=", int64(token))},
		[]clientv3.Op{clientv3.OpDelete(owner), clientv3.OpDelete(entry), clientv3.OpDelete(entry + journalEnd)}, nil); err != nil {
		s.log.Warn("undoing a claim failed; revoking its etcd lease", "machine", n, "region", s.region, "token", token, "error", err)
	}
	s.revoke(ctx, id, n)
}

// rangeKvs returns the keys of the i-th response of a transaction, nil if
// that response is not a range.
func rangeKvs(resp *clientv3.TxnResponse, i int) []*mvccpb.KeyValue {
	if i >= len(resp.Responses) {
		return nil
	}
	if r := resp.Responses[i].GetResponseRange(); r != nil {
		return r.Kvs
	}
	return nil
}
