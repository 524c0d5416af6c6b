package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// Claim takes a number in req.Range whose row is absent, expired by the
// claimer's clock (lease_expiry < req.NowMs), or free (released) with a
// mark at most req.MaxAhead ahead of req.NowMs; never a quarantined one or
// one in req.Exclude. Numbers behind the clock come first, from a random
// start so holders starting together spread out, then free ones lowest
// mark first.
//
// Each candidate is claimed with one conditional upsert that sets the
// holder, lease_expiry = max(its mark, NowMs + LeaseFor) and epoch + 1, and
// keeps the old lease_expiry as floor_ms. The token is the new epoch, the
// lease's MarkMs its lease_expiry, and StartMs max(NowMs, the old mark):
// strictly above the old expiry when the number was taken over, at the
// recorded mark when it was released.
//
// After an error of unknown outcome it re-reads the row: a claim that
// committed (the row names this holder with the next epoch) is adopted;
// otherwise the error is returned, and a claim that did commit after all
// simply expires.
//
// It returns lease.ErrNoFreeNumber, saying why numbers were passed over,
// when none can be claimed.
func (s *Store) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := checkClaim(req); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, s.queries.scan, s.region, req.Range.Lo, req.Range.Hi)
	rs, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim in %s region %d: read the range: %w; retry", req.Range, s.region, err)
	}
	cands, sk := candidates(req, rs)
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pgstore: claim in %s: %w", req.Range, err)
		}
		l, err := s.tryClaim(ctx, req, c)
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			return l, nil
		}
		sk.taken++
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; widen the range, release or unquarantine numbers, or wait for leases to expire",
		lease.ErrNoFreeNumber, req.Range, s.region, sk)
}

func checkClaim(req lease.ClaimRequest) error {
	switch {
	case req.Holder == "":
		return fmt.Errorf("%w: claim without a holder", lease.ErrInvalid)
	case req.Holder == QuarantineHolder:
		return fmt.Errorf("%w: %q is the holder name of quarantined rows", lease.ErrInvalid, req.Holder)
	case req.LeaseFor <= 0:
		return fmt.Errorf("%w: LeaseFor %v must be positive", lease.ErrInvalid, req.LeaseFor)
	case req.MaxAhead < 0:
		return fmt.Errorf("%w: MaxAhead %v is negative", lease.ErrInvalid, req.MaxAhead)
	}
	return checkRange(req.Range)
}

// skips counts the numbers passed over, by reason.
type skips struct {
	held, quarantined, excluded, ahead, taken int
}

func (sk *skips) String() string {
	return fmt.Sprintf("%d held and unexpired by the claimer's clock, %d quarantined, %d excluded, "+
		"%d free with a mark more than MaxAhead ahead of the claimer's clock, %d taken while claiming",
		sk.held, sk.quarantined, sk.excluded, sk.ahead, sk.taken)
}

// candidates orders the numbers of req.Range worth trying from one read of
// the range; each carries the epoch it was read with (0 if it had no row).
func candidates(req lease.ClaimRequest, rs []row) ([]row, *skips) {
	byNum := make(map[int]row, len(rs))
	for _, r := range rs {
		byNum[r.machine] = r
	}
	sk := &skips{}
	maxAhead := req.MaxAhead.Milliseconds()
	var behind, ahead []row
	size := req.Range.Size()
	start := rand.IntN(size)
	for i := range size {
		n := req.Range.Lo + (start+i)%size
		r, ok := byNum[n]
		if !ok {
			r = row{machine: n}
		}
		switch {
		case slices.Contains(req.Exclude, n):
			sk.excluded++
		case r.quarantined():
			sk.quarantined++
		case r.expiryMs < req.NowMs || (r.holder == "" && r.expiryMs == req.NowMs):
			behind = append(behind, r)
		case r.holder != "":
			sk.held++
		case r.expiryMs-req.NowMs > maxAhead:
			sk.ahead++
		default:
			ahead = append(ahead, r)
		}
	}
	slices.SortStableFunc(ahead, func(a, b row) int { return cmp.Compare(a.expiryMs, b.expiryMs) })
	return append(behind, ahead...), sk
}

// tryClaim claims number c.machine, read with epoch c.epoch. It returns nil
// and no error if the number was taken meanwhile.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, c row) (*lease.Lease, error) {
	n := c.machine
	var epoch, expiry, floor int64
	err := s.pool.QueryRow(ctx, s.queries.claim, s.region, n, req.Holder, req.NowMs,
		req.LeaseFor.Milliseconds(), req.MaxAhead.Milliseconds()).Scan(&epoch, &expiry, &floor)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		r, adopted, rerr := s.adopt(ctx, req, c, err)
		if rerr != nil {
			return nil, rerr
		}
		_ = adopted
		epoch, expiry, floor = r.epoch, r.expiryMs, r.floorMs
	}
	l := &lease.Lease{Machine: n, Region: s.region, Holder: req.Holder, Token: uint64(epoch),
		StartMs: max(req.NowMs, floor), MarkMs: expiry}
	s.log.Info("claimed machine number", "machine", n, "region", s.region, "holder", req.Holder, "epoch", epoch,
		"expiry", msTime(expiry), "previous_mark", msTime(floor), "start", msTime(l.StartMs), "claimer_now", msTime(req.NowMs))
	return l, nil
}

// adopt decides a claim that failed with cause: it re-reads the row, and if
// the row names this holder with the epoch after the one read before the
// claim, the claim committed and the row is returned.
func (s *Store) adopt(ctx context.Context, req lease.ClaimRequest, c row, cause error) (row, bool, error) {
	n := c.machine
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r, ok, err := s.read(rctx, n)
	if err != nil {
		return row{}, false, fmt.Errorf("pgstore: claim machine %d region %d: %w; re-reading it failed too (%v), so it may have committed: "+
			"if it did, the lease expires by itself at the claimer's now + LeaseFor; retry", n, s.region, cause, err)
	}
	if !ok || r.holder != req.Holder || r.epoch != c.epoch+1 {
		return row{}, false, fmt.Errorf("pgstore: claim machine %d region %d: %w; the row shows it did not commit "+
			"(holder %q epoch %d); retry", n, s.region, cause, r.holder, r.epoch)
	}
	s.log.Info("claim adopted after an error of unknown outcome: the row shows it committed", "machine", n, "region", s.region,
		"holder", req.Holder, "epoch", r.epoch, "error", cause)
	return r, true, nil
}
