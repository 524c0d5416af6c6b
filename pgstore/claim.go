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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/tablewatch"
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
// Every attempt writes a fresh random nonce (claim_nonce). After an error
// of unknown outcome it re-reads the row: a claim that committed (the row
// carries this attempt's nonce) is adopted; otherwise the error is
// returned, the journal entry of an attempt that committed but was
// overtaken is ended at its start, and a claim that commits after all,
// after the re-read, simply expires.
//
// The same statement writes the claim's journal entry (<table>_claims; see
// "The journal" in the package documentation): a claim that took effect
// has its entry, and one that did not has none.
//
// The claim statement also refuses unless req.Schedule (canonical; ""
// means "v1") is the fleet schedule stored in <table>_fleet ("v1" when
// never set): lease.ErrSchedule; and, with lease.ErrSchedule too, while
// the registry's copy in <table>_region records a fleet schedule other
// than that record (lease.CheckRecordedSchedule) — both rows read FOR
// SHARE in the statement, so neither can change before the claim commits
// (the role claiming needs UPDATE on both tables for that lock). And it claims only while the server is
// the cluster and timeline <table>_origin records; when it is not, the
// claim records a restore first (see "Restores" in the package
// documentation) and starts at or above req.NowMs + req.RestoreWindow.
// Likewise once the rows showed this Store value (or a Keyspace sibling)
// that the table went back in time (signs.go) — the rows its scan reads
// included: the first claim after sets the floor, its clock plus the
// restore window, writes it into <table>_origin for every process, and
// every claim starts at or above it.
//
// It returns lease.ErrNoFreeNumber, saying why numbers were passed over,
// when none can be claimed.
func (s *Store) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	req, err := req.Check(lease.Unlimited)
	if err != nil {
		return nil, err
	}
	sp := s.watch.Before(s.region, req.Range.Lo, req.Range.Hi)
	rows, _ := s.pool.Query(ctx, s.queries.scan, s.region, req.Range.Lo, req.Range.Hi)
	rs, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, fmt.Errorf("pgstore: claim in %s region %d: read the range: %w; retry", req.Range, s.region, s.schemaErr(err))
	}
	// Before the floor: a sign in the rows read floors this very claim,
	// which goes on above it (signs.go).
	_ = s.sawScan(sp, rs)
	floor, gen := s.watch.Floor(req.NowMs, s.restoreWindow(req))
	cands, sk := candidates(req, rs)
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pgstore: claim in %s: %w", req.Range, err)
		}
		l, err := s.tryClaim(ctx, req, c, floor)
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			if !s.watch.Remember(l.Claim, gen) {
				return nil, fmt.Errorf("pgstore: claim in %s region %d: machine %d epoch %d was claimed while a restore of the table "+
					"was being noticed, maybe below the floor it sets; claim again (it frees itself at %s)",
					req.Range, s.region, l.Machine, l.Token, lease.FormatMs(l.MarkMs))
			}
			return l, nil
		}
		sk.taken++
	}
	if len(cands) == 0 {
		// Nothing was tried: say so if the schedule would have refused.
		if err := s.claimRefused(ctx, req); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; %s", lease.ErrNoFreeNumber, req.Range, s.region, sk,
		lease.NoFreeAdvice(req, sk.ahead, sk.held+sk.quarantined+sk.excluded+sk.taken, "widen the range, release or unquarantine numbers, or wait for leases to expire"))
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
			sk.ahead.Add(r.expiryMs)
		default:
			ahead = append(ahead, r)
		}
	}
	slices.SortStableFunc(ahead, func(a, b row) int { return cmp.Compare(a.expiryMs, b.expiryMs) })
	return append(behind, ahead...), sk
}

// claimed is what the claim statement returns.
type claimed struct {
	epoch, expiry, floor *int64 // nil when nothing was claimed
	ident                identity
	same                 bool   // the server is the one the origin row records
	isolation            string // the statement's transaction isolation, as current_setting names it
}

// claimArgs are the claim statement's arguments for number n, with
// floorMs the floor of a restore the store noticed in the rows (0: none).
func (s *Store) claimArgs(req lease.ClaimRequest, n int, nonce string, floorMs int64) []any {
	return []any{s.region, n, req.Holder, req.NowMs, req.LeaseFor.Milliseconds(), req.MaxAhead.Milliseconds(), nonce, req.Schedule,
		s.restoreWindow(req).Milliseconds(), floorMs}
}

// MaxRestoreWindow is the longest restore window a holder of a PostgreSQL
// store may have (lease.RestoreWindow of its Reserve and SelfFence: 5 min
// 31 s at the table timings); StartKeeper refuses a longer one.
const MaxRestoreWindow = DefaultRestoreWindow

// MaxRestoreWindow implements lease.Store: the constant MaxRestoreWindow, for the keeper's
// check at start.
func (s *Store) MaxRestoreWindow() time.Duration { return MaxRestoreWindow }

// tryClaim claims number c.machine, read with epoch c.epoch, starting at
// or above floorMs (the floor of a restore the rows showed; 0: none). It
// returns nil and no error if the number was taken meanwhile,
// lease.ErrSchedule if the claimer's schedule is not the fleet's. When the
// server is not the one the origin row records, it records the change
// (noticeRestore) and tries once more, so the claim starts above the
// restore floor.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, c row, floorMs int64) (*lease.Lease, error) {
	n := c.machine
	for attempt := 0; ; attempt++ {
		nonce := lease.NewNonce()
		var got claimed
		sp := s.before(n)
		err := s.ownTransaction(ctx, fmt.Sprintf("claim machine %d region %d", n, s.region), func(c *pgxpool.Conn) error {
			return c.QueryRow(ctx, s.queries.claim, s.claimArgs(req, n, nonce, floorMs)...).Scan(
				&got.epoch, &got.expiry, &got.floor, &got.ident.sysid, &got.ident.tl, &got.ident.oldSysid, &got.ident.oldTl, &got.same, &got.isolation)
		})
		if errors.Is(err, lease.ErrInvalid) {
			return nil, err // refused before anything was sent
		}
		var epoch, expiry, floor int64
		switch {
		case err != nil:
			r, rerr := s.adopt(ctx, req, c, nonce, sp, s.schemaErr(err))
			if rerr != nil {
				return nil, rerr
			}
			epoch, expiry, floor = r.epoch, r.expiryMs, r.floorMs
		case got.epoch == nil && !isolationAllowsClaim(got.isolation):
			return nil, isolationRefused(got.isolation)
		case got.epoch != nil:
			epoch, expiry, floor = *got.epoch, *got.expiry, *got.floor
			s.saw(sp, n, row{machine: n, holder: req.Holder, expiryMs: expiry, epoch: epoch, floorMs: floor, nonce: nonce}, true)
		case !got.same && attempt == 0:
			if err := s.noticeRestore(ctx, req, got.ident); err != nil {
				return nil, err
			}
			continue
		case !got.same:
			return nil, fmt.Errorf("pgstore: claim machine %d region %d: the server's identity keeps changing (%s); "+
				"make sure the store's URL names one primary, and retry", n, s.region, got.ident)
		default:
			return nil, s.claimRefused(ctx, req)
		}
		l := &lease.Lease{Machine: n, Region: s.region, Holder: req.Holder, Token: uint64(epoch),
			StartMs: max(req.NowMs, floor), MarkMs: expiry, Schedule: req.Schedule, Claim: nonce}
		s.log.Info("claimed machine number", "machine", n, "region", s.region, "holder", req.Holder, "epoch", epoch,
			"expiry", lease.FormatMs(expiry), "previous_mark", lease.FormatMs(floor), "start", lease.FormatMs(l.StartMs), "claimer_now", lease.FormatMs(req.NowMs))
		return l, nil
	}
}

// claimRefused says why a claim statement changed nothing: nil (the
// number was taken meanwhile) or lease.ErrSchedule — the claimer's
// schedule is not the fleet schedule record, or the record is not the
// schedule the registry's copy records.
func (s *Store) claimRefused(ctx context.Context, req lease.ClaimRequest) error {
	if !scheduleCompared() && !registryCompared() {
		return nil
	}
	fs, err := s.why(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: claim in %s region %d: the claim changed nothing, and reading why failed: %w; retry", req.Range, s.region, err)
	}
	if err := checkClaimSchedule(req.Schedule, fs); err != nil {
		return err
	}
	return s.checkClaimRegistry(ctx, req, fs)
}

// adopt decides a claim attempt that failed with cause: it re-reads the
// row, and returns it if the row carries this attempt's nonce (and names
// this holder): then the claim committed and nobody claimed after it; its
// journal entry, written by the same statement, is there. Otherwise the
// attempt did not commit, or did and was overtaken (another claim over
// its expiry, RaiseMarks, a quarantine, a noticed restore) before the
// re-read: giveBack empties the journal entry such an attempt wrote.
// A holder name can be shared by two keepers of one process or two
// processes given one --holder, and an epoch read back may be another
// claimer's, so neither says whose claim committed.
func (s *Store) adopt(ctx context.Context, req lease.ClaimRequest, c row, nonce string, sp tablewatch.Span, cause error) (row, error) {
	n := c.machine
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r, ok, err := s.read(rctx, n)
	if err != nil {
		return row{}, fmt.Errorf("pgstore: claim machine %d region %d: %w; re-reading it failed too (%v), so it may have committed: "+
			"if it did, the lease expires by itself at the claimer's now + LeaseFor; retry", n, s.region, cause, err)
	}
	s.saw(sp, n, r, ok) // a sign is noticed; the claim's Remember then refuses it
	mine := ok && ownAttempt(r, nonce, req.Holder, c.epoch)
	if !mine {
		s.giveBack(rctx, n, nonce)
		return row{}, fmt.Errorf("pgstore: claim machine %d region %d: %w; the row shows this attempt did not commit "+
			"(holder %q epoch %d, another attempt's nonce); retry", n, s.region, cause, r.holder, r.epoch)
	}
	s.log.Info("claim adopted after an error of unknown outcome: the row carries this attempt's nonce", "machine", n, "region", s.region,
		"holder", req.Holder, "epoch", r.epoch, "error", cause)
	return r, nil
}
