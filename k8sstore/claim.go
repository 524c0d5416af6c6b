package k8sstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/snowfence/snowfence/lease"
)

// Claim takes a number in req.Range whose object is absent, expired by the
// claimer's clock (mark < req.NowMs), or free (released) with a mark at
// most req.MaxAhead ahead of req.NowMs; never a quarantined one or one in
// req.Exclude. Numbers behind the clock come first, from a random start
// so that holders starting together spread out, then free ones, lowest
// mark first.
//
// It lists the keyspace's lease objects, reads the origin object (the
// restore floor and the id, origin.go) and claims a candidate with one
// write: a Create for a number without an object (AlreadyExists if another
// claimer made it first), else one JSON patch that tests the
// resourceVersion and the record read (fence_k8srecord.go). The record
// written holds the holder, epoch + 1 (the lease's token), a fresh claim
// nonce, no renewal value, the old mark as floor_ms, and the mark
// max(NowMs + LeaseFor, start), where the lease's StartMs, start, is
// max(NowMs, the old mark, the restore floor). After the write commits
// the origin is read again: if it changed since the claim read it (a
// restore floor written meanwhile, the origin made anew), the claim
// fails, to be retried, and the number frees itself at its mark
// (fence_restore.go).
//
// After an error of unknown outcome it re-reads the object: a claim that
// committed (the record carries this attempt's nonce and holder) is
// adopted; otherwise the error is returned, and a claim that commits
// after all, later, simply expires.
//
// The claim reads the fleet schedule record and the registry's copy
// first, and refuses with lease.ErrSchedule a schedule other than the
// record's, or a record other than the one the registry records; it reads
// them again after its write, and gives back a claim made while they came
// to differ (claimcheck.go). Once
// this Store value (or a Keyspace sibling) noticed that the data went back
// in time (signs.go) — the list this claim reads included — claims start
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
	if err := s.claimSchedule(ctx, req.Schedule); err != nil { // claimcheck.go
		return nil, fmt.Errorf("k8sstore: claim in %s region %d: %w", req.Range, s.region, err)
	}
	sp := s.beforeRange(req.Range.Lo, req.Range.Hi)
	os, err := s.list(ctx, req.Range)
	if err != nil {
		return nil, fmt.Errorf("k8sstore: claim in %s region %d: %w; retry", req.Range, s.region, err)
	}
	// Before the floor: a sign in the objects read floors this very
	// claim, which goes on above it (signs.go).
	_ = s.sawList(sp, os)
	floor, gen, or, err := s.claimFloor(ctx, req, sp.gen)
	if err != nil {
		return nil, fmt.Errorf("k8sstore: claim in %s region %d: %w", req.Range, s.region, err)
	}
	cands, sk := candidates(req, os)
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("k8sstore: claim in %s: %w", req.Range, err)
		}
		c, ok, err := s.reread4claim(ctx, req, c)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			sk.taken++
			continue
		}
		l, err := s.tryClaim(ctx, req, c, floor, or)
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			if !s.id.watch.Remember(l.Claim, gen) {
				return nil, fmt.Errorf("k8sstore: claim in %s region %d: machine %d epoch %d was claimed while a restore of the data "+
					"was being noticed, maybe below the floor it sets; claim again (it frees itself at %s)",
					req.Range, s.region, l.Machine, l.Token, lease.FormatMs(l.MarkMs))
			}
			if err := s.confirmClaim(ctx, l); err != nil { // claimcheck.go
				return nil, err
			}
			return l, nil
		}
		sk.taken++
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; %s", lease.ErrNoFreeNumber, req.Range, s.region, sk,
		lease.NoFreeAdvice(req, sk.ahead, sk.held+sk.quarantined+sk.excluded+sk.taken, "widen the range, release numbers, or wait for leases to expire"))
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

// A candidate is a number to try, with its object as the list read it.
type candidate struct {
	n int
	o object
}

// A standing is what a claim makes of a number's object.
type standing int

const (
	standBehind      standing = iota // absent, expired, or free at the claimer's clock: claim first
	standAhead                       // free, its mark ahead within MaxAhead: claim after those behind
	standHeld                        // held and unexpired
	standQuarantined                 // quarantined
	standFarAhead                    // free, its mark more than MaxAhead ahead
)

// standingOf judges object o for a claim of req.
func standingOf(req lease.ClaimRequest, o object) standing {
	r := o.rec
	switch {
	case o.exists && r.quarantined():
		return standQuarantined
	case !o.exists || r.MarkMs < req.NowMs || (r.Holder == "" && r.MarkMs == req.NowMs):
		return standBehind
	case r.Holder != "":
		return standHeld
	case r.MarkMs-req.NowMs > req.MaxAhead.Milliseconds():
		return standFarAhead
	}
	return standAhead
}

// candidates orders the numbers of req.Range worth trying.
func candidates(req lease.ClaimRequest, os map[int]object) ([]candidate, *skips) {
	sk := &skips{}
	var behind, ahead []candidate
	size := req.Range.Size()
	start := rand.IntN(size)
	for i := range size {
		n := req.Range.Lo + (start+i)%size
		o := os[n]
		if slices.Contains(req.Exclude, n) {
			sk.excluded++
			continue
		}
		switch standingOf(req, o) {
		case standQuarantined:
			sk.quarantined++
		case standBehind:
			behind = append(behind, candidate{n, o})
		case standHeld:
			sk.held++
		case standFarAhead:
			sk.ahead.Add(o.rec.MarkMs)
		default:
			ahead = append(ahead, candidate{n, o})
		}
	}
	slices.SortStableFunc(ahead, func(a, b candidate) int { return cmp.Compare(a.o.rec.MarkMs, b.o.rec.MarkMs) })
	return append(behind, ahead...), sk
}

// reread4claim reads candidate c's object again, with a quorum Get, and
// returns the candidate as read, and whether it is still worth trying.
// The list the candidates came from may be served from the API server's
// watch cache, and the JSON patch's tests are evaluated against that
// cache too, with only the object's resourceVersion compared with etcd's:
// after an etcd restored under a running API server (without a
// --bump-revision past every revision it had served), the cache can show
// a record of the lost history at a resourceVersion that etcd gives again
// to another record, and a claim planned on the list would test the cached
// record and commit on etcd's — over a live lease. A Get without a
// resourceVersion reads etcd, so the claim plans on etcd's record: a
// patch planned on it fails its tests against a diverged cache (422) and
// is then tried by the API server against etcd's own object, where it
// passes only if that is what was read. And the Get against the list
// shows the divergence — the same UID at a lower resourceVersion — as a
// restore sign (signs.go): the claim is refused, and the next one starts
// above the restore floor.
func (s *Store) reread4claim(ctx context.Context, req lease.ClaimRequest, c candidate) (candidate, bool, error) {
	sp := s.before(c.n)
	o, err := s.get(ctx, c.n)
	if err != nil {
		return c, false, fmt.Errorf("k8sstore: claim machine %d region %d: %w; retry", c.n, s.region, err)
	}
	if err := s.saw(sp, c.n, o); err != nil {
		return c, false, fmt.Errorf("k8sstore: claim machine %d region %d: %w; claim again (above the restore floor it sets)", c.n, s.region, err)
	}
	switch standingOf(req, o) {
	case standBehind, standAhead:
		return candidate{c.n, o}, true, nil
	}
	return c, false, nil
}

// tryClaim claims candidate c, starting at or above floorMs (the restore
// floor; 0: none), with one write, and then checks that the origin is
// still or, as the claim read it. It returns nil and no error if the
// number was taken meanwhile.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, c candidate, floorMs int64, or originRead) (*lease.Lease, error) {
	nonce := lease.NewNonce()
	old := c.o.rec
	start := max(req.NowMs, old.MarkMs, floorMs)
	rec := record{Holder: req.Holder, Epoch: old.Epoch + 1, MarkMs: max(req.NowMs+req.LeaseFor.Milliseconds(), start),
		Claim: nonce, FloorMs: old.MarkMs}
	sp := s.before(c.n)
	// The claim's journal entry, written in the claim's own write (journal.go).
	journal := s.claimJournal(c.n, c.o, entry{Token: rec.Epoch, Claim: nonce, Holder: req.Holder, ClaimedMs: req.NowMs,
		PrevMarkMs: old.MarkMs, StartMs: start})
	var got *coordv1.Lease
	var err error
	if !c.o.exists {
		got, err = s.createJournal(ctx, c.n, rec, req.NowMs, journal)
	} else {
		got, err = s.patch(ctx, s.name(c.n), append(writeOps(c.o, rec, spec(rec, req.NowMs, req.NowMs)), journalOp(journal)))
	}
	switch {
	case err == nil:
		o, derr := s.objectOf(got)
		if derr != nil {
			return nil, derr
		}
		_ = s.saw(sp, c.n, o)
	case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoNamespace):
		return nil, fmt.Errorf("k8sstore: claim machine %d region %d: %w", c.n, s.region, err)
	case definite(err):
		if c.o.exists {
			if now, rerr := s.reread(ctx, c.n); rerr == nil && refusedAsIs(c.o, now) {
				return nil, fmt.Errorf("k8sstore: claim machine %d region %d: the API server refused the write of an unchanged object: %w; "+
					"check the object (kubectl get lease %s -o yaml) and what admission webhooks change leases", c.n, s.region, err, s.name(c.n))
			}
		}
		s.log.Debug("claim lost a race", "machine", c.n, "holder", req.Holder, "error", err)
		return nil, nil
	default:
		o, rerr := s.reread(ctx, c.n)
		if rerr != nil {
			return nil, fmt.Errorf("k8sstore: claim machine %d region %d: %w; re-reading it failed too (%v), so it may have committed: "+
				"if it did, the number frees itself at %s; retry", c.n, s.region, err, rerr, lease.FormatMs(rec.MarkMs))
		}
		_ = s.saw(sp, c.n, o) // a sign is noticed; the claim's Remember then refuses it
		if !ownAttempt(o, nonce, req.Holder, rec.Epoch) {
			return nil, fmt.Errorf("k8sstore: claim machine %d region %d: %w; the object shows this attempt did not commit yet "+
				"(holder %q epoch %d, another attempt's nonce); if it commits later, the number frees itself at %s; retry",
				c.n, s.region, err, o.rec.Holder, o.rec.Epoch, lease.FormatMs(rec.MarkMs))
		}
		s.log.Info("claim adopted after an error of unknown outcome: the object carries this attempt's nonce", "machine", c.n,
			"holder", req.Holder, "epoch", o.rec.Epoch, "error", err)
		rec = o.rec
	}
	if err := s.originUnchanged(ctx, or); err != nil {
		return nil, fmt.Errorf("k8sstore: claim machine %d region %d: %w; claim again (this claim frees itself at %s)",
			c.n, s.region, err, lease.FormatMs(rec.MarkMs))
	}
	l := &lease.Lease{Machine: c.n, Region: s.region, Holder: req.Holder, Token: rec.Epoch, StartMs: start, MarkMs: rec.MarkMs,
		Schedule: req.Schedule, Claim: nonce}
	s.log.Info("claimed machine number", "machine", c.n, "region", s.region, "holder", req.Holder, "epoch", rec.Epoch,
		"mark", lease.FormatMs(rec.MarkMs), "previous_mark", lease.FormatMs(old.MarkMs), "start", lease.FormatMs(start),
		"claimer_now", lease.FormatMs(req.NowMs))
	return l, nil
}
