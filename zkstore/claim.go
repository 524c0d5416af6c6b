package zkstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// Claim takes a number in req.Range whose znode is absent, expired by the
// claimer's clock (mark < req.NowMs), or free (released) with a mark at
// most req.MaxAhead ahead of req.NowMs; never a quarantined one or one in
// req.Exclude. Numbers behind the clock come first, from a random start
// so that holders starting together spread out, then free ones, lowest
// mark first.
//
// It syncs, reads the fleet schedule record and the registry's copy
// (schedule.go, registry.go), the region's lease znodes and the origin
// znode, and claims a candidate with one conditional Multi: Create for a
// number without a znode (which fails if another claimer made it first),
// Set on the version read otherwise (which fails if the znode changed
// since), each with checks that the origin znode, the fleet schedule
// record and the registry are still at the versions read (the restore
// floor, id and schedule the claim was planned on; an error to retry
// otherwise), and the claim's journal entry (journal.go).
// The record written holds the holder, epoch + 1 (the lease's token), a
// fresh claim nonce, no renewal value, the old mark as floor_ms, and the
// mark max(NowMs + LeaseFor, start), where the lease's StartMs, start, is
// max(NowMs, the old mark, the restore floor): strictly above the old
// expiry when the number was taken over, at the recorded mark when it was
// released.
//
// After an error of unknown outcome it re-reads the znode: a claim that
// committed (the record carries this attempt's nonce and holder) is
// adopted; otherwise the error is returned, and a claim that commits
// after all, later, simply expires.
//
// A claim whose req.Schedule is not the fleet schedule record's, or made
// while the registry records another schedule than the record, is refused
// with lease.ErrSchedule. Once this Store
// value (or a Keyspace sibling) noticed that the data went back in time
// (signs.go, fence_restore.go) — the scan this claim reads included — claims start
// at or above the restore floor: the noticing claimer's clock plus the
// restore window. It returns lease.ErrNoFreeNumber, saying why numbers
// were passed over, when none can be claimed.
func (s *Store) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	req, err := req.Check(lease.Unlimited)
	if err != nil {
		return nil, err
	}
	if err := s.ensureParents(ctx); err != nil {
		return nil, err
	}
	sp := s.beforeRange(req.Range.Lo, req.Range.Hi)
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: claim in %s region %d: %w", req.Range, s.region, err)
	}
	cs, err := s.readClaimSchedule(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("zkstore: claim in %s region %d: %w", req.Range, s.region, err)
	}
	zs, dir, err := s.scan(ctx, req.Range)
	if err == nil && generation(s.c) != g {
		err = errSwapped
	}
	if err != nil {
		return nil, fmt.Errorf("zkstore: claim in %s region %d: %w; retry", req.Range, s.region, err)
	}
	// Before the floor: a sign in the znodes read floors this very claim,
	// which goes on above it (signs.go).
	if s.sawScan(sp, zs) == nil {
		_ = s.sawPathStat(sp, s.regionPath(), fmt.Sprintf("the znode of region %d", s.region), dir)
	}
	floor, gen, originVer, err := s.claimFloor(ctx, req, sp.gen)
	if err == nil && generation(s.c) != g {
		err = errSwapped // the floor read may be stale
	}
	if err != nil {
		return nil, fmt.Errorf("zkstore: claim in %s region %d: %w", req.Range, s.region, err)
	}
	cands, sk := candidates(req, zs)
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("zkstore: claim in %s: %w", req.Range, err)
		}
		l, err := s.tryClaim(ctx, req, c, floor, originVer, &cs)
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			if !s.id.watch.Remember(l.Claim, gen) {
				return nil, fmt.Errorf("zkstore: claim in %s region %d: machine %d epoch %d was claimed while a restore of the data "+
					"was being noticed, maybe below the floor it sets; claim again (it frees itself at %s)",
					req.Range, s.region, l.Machine, l.Token, lease.FormatMs(l.MarkMs))
			}
			return l, nil
		}
		sk.taken++
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; %s", lease.ErrNoFreeNumber, req.Range, s.region, sk,
		lease.NoFreeAdvice(req, sk.ahead, sk.held+sk.quarantined+sk.excluded+sk.taken, "widen the range, release numbers, or wait for leases to expire"))
}

// scan reads the znodes of the numbers in r that have one, after the sync
// the caller made, and returns them with the stat of the region's znode
// (its children's version and the zxid of the last child created).
func (s *Store) scan(ctx context.Context, r lease.Range) (map[int]znode, zstat, error) {
	type kids struct {
		names []string
		st    zstat
	}
	k, err := call(ctx, func() (kids, error) {
		names, st, err := s.c.Children(s.regionPath())
		if st == nil {
			return kids{names: names}, err
		}
		return kids{names, zstat{czxid: st.Czxid, mzxid: st.Pzxid, version: st.Cversion}}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return map[int]znode{}, zstat{}, nil
	}
	if err != nil {
		return nil, zstat{}, fmt.Errorf("zkstore: list %s: %w", s.regionPath(), err)
	}
	var ns []int
	for _, name := range k.names {
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 || strconv.Itoa(n) != name {
			continue // not a lease znode: never written by this store
		}
		if r.Contains(n) {
			ns = append(ns, n)
		}
	}
	zs, err := s.getAll(ctx, ns)
	if err != nil {
		return nil, zstat{}, err
	}
	return zs, k.st, nil
}

// scanParallel bounds the reads a claim's scan has in flight at once: the
// session pipelines them, so a range of many numbers costs a few round
// trips, not one per number.
const scanParallel = 16

// getAll reads the znodes of numbers ns, scanParallel at a time, and
// returns those that exist.
func (s *Store) getAll(ctx context.Context, ns []int) (map[int]znode, error) {
	zs := make(map[int]znode, len(ns))
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, scanParallel)
	var wg sync.WaitGroup
	for _, n := range ns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			z, err := s.get(ctx, n)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && first == nil:
				first = err
			case err == nil && z.exists:
				zs[n] = z
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return zs, nil
}

// skips counts the numbers passed over, by reason.
type skips struct {
	held, quarantined, excluded, taken int
	ahead                              lease.Ahead
}

func (sk *skips) String() string {
	return fmt.Sprintf("%d held and unexpired by the claimer's clock, %d quarantined, %d excluded, "+
		"%d free with a mark more than MaxAhead ahead of the claimer's clock, %d taken while claiming",
		sk.held, sk.quarantined, sk.excluded, sk.ahead.N, sk.taken)
}

// A candidate is a number to try, with its znode as the scan read it.
type candidate struct {
	n int
	z znode
}

// candidates orders the numbers of req.Range worth trying.
func candidates(req lease.ClaimRequest, zs map[int]znode) ([]candidate, *skips) {
	sk := &skips{}
	maxAhead := req.MaxAhead.Milliseconds()
	var behind, ahead []candidate
	size := req.Range.Size()
	start := rand.IntN(size)
	for i := range size {
		n := req.Range.Lo + (start+i)%size
		z := zs[n]
		r := z.rec
		switch {
		case slices.Contains(req.Exclude, n):
			sk.excluded++
		case z.exists && r.quarantined():
			sk.quarantined++
		case !z.exists || r.MarkMs < req.NowMs || (r.Holder == "" && r.MarkMs == req.NowMs):
			behind = append(behind, candidate{n, z})
		case r.Holder != "":
			sk.held++
		case r.MarkMs-req.NowMs > maxAhead:
			sk.ahead.Add(r.MarkMs)
		default:
			ahead = append(ahead, candidate{n, z})
		}
	}
	slices.SortStableFunc(ahead, func(a, b candidate) int { return cmp.Compare(a.z.rec.MarkMs, b.z.rec.MarkMs) })
	return append(behind, ahead...), sk
}

// tryClaim claims candidate c, starting at or above floorMs (the restore
// floor; 0: none), in one multi-op that also checks that the origin is
// still at version originVer (the id and the floor the claim was planned
// on) and replaces the old claim's child znode by its own
// (fence_zkchild.go). It returns nil and no error if the number was taken meanwhile, and
// an error to retry if the origin changed.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, c candidate, floorMs int64, originVer int32, cs *claimSchedule) (*lease.Lease, error) {
	nonce := lease.NewNonce()
	old := c.z.rec
	start := max(req.NowMs, old.MarkMs, floorMs)
	rec := record{Holder: req.Holder, Epoch: old.Epoch + 1, MarkMs: max(req.NowMs+req.LeaseFor.Milliseconds(), start),
		Claim: nonce, FloorMs: old.MarkMs}
	sp := s.before(c.n)
	jp, err := s.planJournal(ctx, c.n)
	if err != nil {
		return nil, fmt.Errorf("zkstore: claim machine %d region %d: %w", c.n, s.region, err)
	}
	entry := entry{Token: rec.Epoch, Claim: nonce, Holder: req.Holder, ClaimedMs: req.NowMs, PrevMarkMs: old.MarkMs, StartMs: start}
	var ops []any
	var res []zk.MultiResponse
	// The ops before originEnd check the origin; from there to metaEnd,
	// the schedule record and the registry.
	originEnd, metaEnd := 0, 0
	for range 2 {
		// The ops are made here, not in the call: see extend.
		ops = s.originCheck(originVer)
		originEnd = len(ops)
		ops = append(ops, cs.checks(s)...)
		metaEnd = len(ops)
		ops = append(ops, s.claimOps(c.n, c.z, rec)...)
		usedAt := -1
		if u := s.usedOps(cs.used); !c.z.exists && len(u) > 0 {
			usedAt = len(ops)
			ops = append(ops, u...)
		}
		ops = append(ops, jp.ops(s, c.n, entry)...)
		res, err = call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		if err == nil || failedOp(res) != usedAt || usedAt < 0 {
			break
		}
		cs.used = true // another write made the first lease record meanwhile: the marker is there now
	}
	var st *zk.Stat
	if err == nil {
		st = s.multiStat(c.n, ops, res)
	}
	failed := failedOp(res)
	if err != nil && failed >= 0 && failed < originEnd {
		return nil, fmt.Errorf("zkstore: claim machine %d region %d: the origin znode changed since the claim read it (%v): "+
			"a restore floor was written meanwhile; retry", c.n, s.region, res[failed].Error)
	}
	if err != nil && failed >= originEnd && failed < metaEnd {
		return nil, fmt.Errorf("zkstore: claim machine %d region %d: the fleet schedule record or the region registry changed since the claim "+
			"read it (%v); retry, and the claim compares the schedule again", c.n, s.region, res[failed].Error)
	}
	if err != nil && failed >= 0 {
		switch o := ops[failed].(type) {
		case *zk.DeleteRequest:
			s.childMissing(ctx, sp, c, o.Path, err)
		case *zk.CreateRequest:
			if errors.Is(res[failed].Error, zk.ErrNoNode) {
				s.forgetParents() // the region's znode is gone (the path wiped): make it again
			}
		}
	}
	switch {
	case err == nil:
		s.saw(sp, c.n, znode{exists: true, rec: rec, stat: statOf(st)})
	case definite(err):
		s.log.Debug("claim lost a race", "machine", c.n, "holder", req.Holder, "error", err)
		return nil, nil
	default:
		z, rerr := s.reread(ctx, c.n)
		if rerr != nil {
			return nil, fmt.Errorf("zkstore: claim machine %d region %d: %w; re-reading it failed too (%v), so it may have committed: "+
				"if it did, the number frees itself at %s; retry", c.n, s.region, err, rerr, lease.FormatMs(rec.MarkMs))
		}
		s.saw(sp, c.n, z) // a sign is noticed; the claim's Remember then refuses it
		if !ownAttempt(z, nonce, req.Holder, rec.Epoch) {
			return nil, fmt.Errorf("zkstore: claim machine %d region %d: %w; the znode shows this attempt did not commit yet "+
				"(holder %q epoch %d, another attempt's nonce); if it commits later, the number frees itself at %s; retry",
				c.n, s.region, err, z.rec.Holder, z.rec.Epoch, lease.FormatMs(rec.MarkMs))
		}
		s.log.Info("claim adopted after an error of unknown outcome: the znode carries this attempt's nonce", "machine", c.n,
			"holder", req.Holder, "epoch", z.rec.Epoch, "error", err)
		rec = z.rec
	}
	l := &lease.Lease{Machine: c.n, Region: s.region, Holder: req.Holder, Token: rec.Epoch, StartMs: start, MarkMs: rec.MarkMs,
		Schedule: req.Schedule, Claim: nonce}
	s.log.Info("claimed machine number", "machine", c.n, "region", s.region, "holder", req.Holder, "epoch", rec.Epoch,
		"mark", lease.FormatMs(rec.MarkMs), "previous_mark", lease.FormatMs(old.MarkMs), "start", lease.FormatMs(start),
		"claimer_now", lease.FormatMs(req.NowMs))
	return l, nil
}

// childMissing logs why a claim's Delete of the read claim's child failed
// while the znode's data version matched the read: it re-reads the znode.
// Under another claim now, the version repeated after a restore (the
// re-read notices what it can, signs.go), and the child must not be made
// again: a write planned on the lost history's claim would then land on
// the live record. Under the read claim still, the child was deleted by
// hand, and the log names the child to create again — the one of the
// record's own claim.
func (s *Store) childMissing(ctx context.Context, sp span, c candidate, child string, err error) {
	z, rerr := s.reread(ctx, c.n)
	if rerr != nil {
		s.log.Warn("claim found the read claim's child znode gone at the version it read, and could not re-read the znode",
			"machine", c.n, "child", child, "error", err, "reread_error", rerr)
		return
	}
	_ = s.saw(sp, c.n, z)
	if !z.exists || z.rec.Claim != c.z.rec.Claim {
		s.log.Warn("claim found the znode's version repeated under another claim: ZooKeeper's data was restored from a copy; "+
			"do not create claim children by hand", "machine", c.n, "read_claim", c.z.rec.Claim, "claim_now", z.rec.Claim, "error", err)
		return
	}
	s.log.Warn("claim found the child znode of the record's own claim gone (deleted by hand): the number cannot be claimed until it "+
		"is created again, empty — only this child, which the record names", "machine", c.n, "child", s.childPath(c.n, z.rec.Claim), "error", err)
}
