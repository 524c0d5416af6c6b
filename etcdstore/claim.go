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

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// Claim takes a free number in req.Range: not held, not quarantined, not in
// req.Exclude, and with a mark at most req.MaxAhead ahead of req.NowMs.
// Numbers whose mark is behind req.NowMs come first, starting from a random
// number in the range so holders starting together spread out; then the
// others, lowest mark first.
//
// For each candidate it grants an etcd lease of req.LeaseFor (rounded up to
// whole seconds, at least 1 s) and claims the number with a transaction
// that puts the owner key only if neither the owner nor the quarantine key
// exists, reading the mark in the same transaction. The fencing token is
// the transaction's revision, which is the owner key's create revision.
// StartMs is max(stored mark, req.NowMs) — and, once this store has seen
// etcd go back in time, at least the restore window (req.RestoreWindow,
// else Config.RestoreMargin) after the moment it noticed, on the
// claimer's clock; that floor is not held against MaxAhead. A number whose
// stored mark turns out too far ahead is released again and the next one
// tried.
//
// The fleet schedule (<prefix>/schedule) is read with the range, and the
// claim refused with lease.ErrSchedule unless req.Schedule equals it; the
// claim transaction also compares the schedule key with the value read,
// so a schedule set meanwhile is never missed. The lease carries
// req.Schedule in canonical form.
//
// After an error of unknown outcome it re-reads the owner key: a claim that
// committed (the key is bound to this claim's etcd lease) is adopted; one
// that did not, or cannot be told, has its etcd lease revoked, which undoes
// it if it committed after all, and the error is returned.
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
	resp, err := s.txn(ctx, nil, ops, nil)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: claim in %s: read the range: %w", req.Range, err)
	}
	rangeAt := func(i int) []*mvccpb.KeyValue {
		if r := resp.Responses[i].GetResponseRange(); r != nil {
			return r.Kvs
		}
		return nil
	}
	kvs := rangeAt(0)
	if !revert.Restore {
		s.marksWentBack(epoch, s.keys, revs, kvs, resp.Header)
		s.sawMarks(epoch, s.keys.base, kvs)
		for i, b := range bases {
			s.marksWentBack(epoch, keyspace{base: b}, foreign[b], rangeAt(2+i), resp.Header)
			s.sawMarks(epoch, b, rangeAt(2+i)) // what this read saw is known too, as in its own keyspace
		}
	}
	sched := guardOf(kvAt(resp, 1))
	if !revert.Schedule {
		if err := checkScheduleKV(req.Schedule, kvAt(resp, 1)); err != nil {
			return nil, err
		}
	}
	cands, skipped, err := s.candidates(req, kvs)
	if err != nil {
		return nil, err
	}
	for _, n := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("etcdstore: claim in %s: %w", req.Range, err)
		}
		l, why, err := s.tryClaim(ctx, req, n, &sched)
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			return l, nil
		}
		skipped.add(why)
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; widen the range, release or unquarantine numbers, or wait for marks to pass",
		lease.ErrNoFreeNumber, req.Range, s.region, skipped)
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
			sk.ahead++
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
	skipTaken skipReason = iota // held or quarantined by the time of the claim
	skipAhead                   // mark too far ahead
)

// skips counts the numbers passed over, by reason.
type skips struct {
	held, quarantined, excluded, ahead, taken int
}

func (sk *skips) add(why skipReason) {
	switch why {
	case skipTaken:
		sk.taken++
	case skipAhead:
		sk.ahead++
	}
}

func (sk *skips) String() string {
	return fmt.Sprintf("%d held, %d quarantined, %d excluded, %d with a mark more than MaxAhead ahead of the claimer's clock, %d taken while claiming",
		sk.held, sk.quarantined, sk.excluded, sk.ahead, sk.taken)
}

// ttlSeconds is an etcd lease TTL for d: whole seconds, rounded up, at
// least 1.
func ttlSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// scheduleTries bounds the claim attempts on one number whose fleet
// schedule key was rewritten, with the same schedule, under it.
const scheduleTries = 3

// tryClaim claims number n, with the fleet schedule as sched guards it
// (updated when the key was rewritten with the same schedule). It returns
// the lease, or a reason to try the next number, or an error that ends the
// claim.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, n int, sched *scheduleGuard) (*lease.Lease, skipReason, error) {
	grant, err := s.cli.Grant(ctx, ttlSeconds(req.LeaseFor))
	if err != nil {
		return nil, 0, fmt.Errorf("etcdstore: claim machine %d: grant an etcd lease: %w", n, err)
	}
	id := grant.ID
	owner, quar, markKey := s.keys.owner(n), s.keys.quarantine(n), s.keys.mark(n)
	var resp *clientv3.TxnResponse
	for attempt := 0; ; attempt++ {
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(owner), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(quar), "=", 0),
		}
		if !revert.Schedule {
			cmps = append(cmps, sched.cmp(s.keys.schedule))
		}
		resp, err = s.txn(ctx, cmps,
			[]clientv3.Op{
				clientv3.OpPut(owner, encode(ownerValue{Holder: req.Holder, ClaimedAtMs: req.NowMs}), clientv3.WithLease(id)),
				clientv3.OpGet(markKey),
			},
			[]clientv3.Op{clientv3.OpGet(s.keys.schedule)})
		if err != nil || resp.Succeeded || revert.Schedule {
			break
		}
		sk := kvAt(resp, 0)
		if sched.holds(sk) {
			break // taken or quarantined
		}
		if err := checkScheduleKV(req.Schedule, sk); err != nil {
			s.revoke(ctx, id, n)
			return nil, 0, err
		}
		*sched = guardOf(sk) // rewritten with the same schedule
		if attempt+1 >= scheduleTries {
			s.revoke(ctx, id, n)
			return nil, 0, fmt.Errorf("etcdstore: claim machine %d: the fleet schedule key %s keeps changing under it; retry", n, s.keys.schedule)
		}
	}
	var token uint64
	var mark *mvccpb.KeyValue
	switch {
	case err != nil:
		token, mark, err = s.adopt(ctx, req, n, id, err)
		if err != nil {
			return nil, 0, err
		}
	case !resp.Succeeded:
		s.revoke(ctx, id, n)
		return nil, skipTaken, nil
	default:
		token, mark = uint64(resp.Header.Revision), kvAt(resp, 1)
	}
	mv, err := parseMark(mark)
	if err != nil {
		s.undo(ctx, n, token, id)
		return nil, 0, err
	}
	startMs := max(mv.MarkMs, req.NowMs)
	if tooFar(startMs, req) {
		s.log.Info("claimed number passed over: its mark is too far ahead of the claimer's clock", "machine", n, "region", s.region,
			"holder", req.Holder, "token", token, "mark", lease.FormatMs(mv.MarkMs), "now", lease.FormatMs(req.NowMs), "max_ahead", req.MaxAhead)
		s.undo(ctx, n, token, id)
		return nil, skipAhead, nil
	}
	startMs = max(startMs, s.claimFloorMs(req))
	// The lease belongs to the history as now known: if this very response
	// revealed a restore, the claim was made in the restored store.
	s.mu.Lock()
	h := &held{etcdLease: id, epoch: s.hist.epoch, markMs: mv.MarkMs, floorMs: mv.MarkMs, sched: *sched}
	s.setMarkRevLocked(h, n, modRev(mark))
	s.leases[leaseKey{n, token}] = h
	s.mu.Unlock()
	l := &lease.Lease{Machine: n, Region: s.region, Holder: req.Holder, Token: token, StartMs: startMs, MarkMs: mv.MarkMs, Schedule: req.Schedule,
		Claim: claimID(id)}
	s.log.Info("claimed machine number", "machine", n, "region", s.region, "holder", req.Holder, "token", token,
		"mark", lease.FormatMs(mv.MarkMs), "start", lease.FormatMs(startMs), "schedule", req.Schedule, "etcd_lease", fmt.Sprintf("%x", int64(id)))
	return l, 0, nil
}

// adopt decides a claim transaction that failed with cause: if the owner key
// is bound to this claim's etcd lease the claim committed, and its token and
// mark are returned. Otherwise the etcd lease is revoked (undoing a claim
// that commits late) and an error returned.
func (s *Store) adopt(ctx context.Context, req lease.ClaimRequest, n int, id clientv3.LeaseID, cause error) (uint64, *mvccpb.KeyValue, error) {
	rctx, cancel := s.detached(ctx)
	defer cancel()
	resp, err := s.txn(rctx, nil, []clientv3.Op{clientv3.OpGet(s.keys.owner(n)), clientv3.OpGet(s.keys.mark(n))}, nil)
	if err != nil {
		s.revoke(ctx, id, n)
		return 0, nil, fmt.Errorf("etcdstore: claim machine %d: %w; re-reading it failed too (%v), so its etcd lease was revoked, "+
			"which undoes the claim if it committed; retry", n, cause, err)
	}
	o := kvAt(resp, 0)
	if o == nil || clientv3.LeaseID(o.Lease) != id {
		s.revoke(ctx, id, n)
		return 0, nil, fmt.Errorf("etcdstore: claim machine %d: %w; the store shows it did not commit; retry", n, cause)
	}
	if ov, err := parseOwner(o); err != nil || ov.Holder != req.Holder {
		s.revoke(ctx, id, n)
		return 0, nil, errors.Join(fmt.Errorf("etcdstore: claim machine %d: %w; the owner key on this claim's etcd lease names another holder", n, cause), err)
	}
	s.log.Info("claim adopted after an error of unknown outcome: the store shows it committed", "machine", n, "region", s.region,
		"holder", req.Holder, "token", o.CreateRevision, "error", cause)
	return uint64(o.CreateRevision), kvAt(resp, 1), nil
}

// undo gives back a number just claimed and not used: it deletes the owner
// key if it is still this claim's, then revokes the etcd lease.
func (s *Store) undo(ctx context.Context, n int, token uint64, id clientv3.LeaseID) {
	dctx, cancel := s.detached(ctx)
	defer cancel()
	owner := s.keys.owner(n)
	if _, err := s.txn(dctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(owner), "=", int64(token))},
		[]clientv3.Op{clientv3.OpDelete(owner)}, nil); err != nil {
		s.log.Warn("undoing a claim failed; revoking its etcd lease", "machine", n, "region", s.region, "token", token, "error", err)
	}
	s.revoke(ctx, id, n)
}
