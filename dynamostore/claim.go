package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// The claim writes the holder, the new expiry and epoch, its nonce and its
// journal entry (journal.go), and removes the renewal value the last
// holder's renewals left (lease.Renewals: none until the first). Its
// condition pins the state the scan read — no item; or the epoch, the mark
// and jcur (number, token, nonce, end), with the mark below the claimer's
// clock (absent or expired) or, for a released number whose mark is still
// ahead of the claimer's clock, no holder — so the token and the previous
// mark the entry names are those in force when the write commits, and the
// jcur it overwrites is the one the claimer archived (archive.go).
const (
	claimUpdate    = "SET holder = :me, lease_expiry = :expiry, lease_epoch = :tok, claim_nonce = :nonce, jcur = :entry REMOVE renewal"
	claimAbsent    = "attribute_not_exists(machine_id)"
	claimExpired   = "lease_expiry = :seen AND lease_expiry < :now"
	claimFreeAhead = "attribute_not_exists(holder) AND lease_expiry = :seen"
)

// Claim takes a free number in req.Range, not in req.Exclude: first one with
// no item or whose lease expired by req.NowMs (lease_expiry < NowMs),
// starting from a random number in the range so holders starting together
// spread out; then released numbers whose mark is at most req.MaxAhead ahead
// of NowMs, lowest mark first. The candidates come from a consistent scan;
// each claim is a conditional UpdateItem that adds one to lease_epoch, the
// new lease's token, and writes lease_expiry = NowMs + LeaseFor (never below
// the mark). StartMs is NowMs for an expired number (strictly above its
// expiry, by the condition) and the stored mark for a released one.
//
// The same UpdateItem writes the claim's journal entry (History) as jcur,
// after the jcur the scan read was copied into the journal table; its
// condition compares the epoch, the mark and jcur with those the scan
// read, so a number that changed in between (even to another expired
// state, or only by a release) is passed over as taken, and the entry's
// token and PrevMarkMs (the mark read) are those the write replaced. A
// number whose jcur cannot be archived (the journal table holds another
// claim's entry under its number) is passed over; a copy of unknown
// outcome that a re-read does not find fails the claim.
//
// Every attempt writes a fresh nonce (claim_nonce). After a failed
// condition (the item DynamoDB returns with it) or an error of unknown
// outcome (the item re-read), a claim is adopted only if the item carries
// that attempt's nonce: a holder string can be shared by two keepers of one
// process or two processes, and their claims must not be mistaken for each
// other's.
//
// The same consistent scan reads the fleet schedule (lease.ErrSchedule
// unless req.Schedule is the fleet's), the region registry's copy
// (lease.ErrSchedule while it records a fleet schedule other than the
// record: lease.CheckRecordedSchedule) and the table identity: after a
// restore, claims start at least the restore window after it was noticed
// (restore.go), and so they do once the items showed that the table went
// back in time (signs.go) — the items its scan reads included. The
// registry is read again after the claim committed (confirmRegistry), and
// a claim made while it came to differ from the record is given back. It
// returns lease.ErrNoFreeNumber, saying why each number was passed over,
// when no number can be claimed.
func (s *Store) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	req, err := req.Check(Machines)
	if err != nil {
		return nil, err
	}
	sp := s.id.watch.Before(s.region, req.Range.Lo, req.Range.Hi)
	items, metas, err := s.scanWith(ctx, req.Range, true)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: claim in %s: %w; retry", req.Range, err)
	}
	// Before the floor: a sign in the scan floors this very claim, which
	// goes on above it (signs.go).
	_ = s.sawScan(sp, items)
	fleet, err := parseSchedule(metas[scheduleKey])
	if err != nil {
		return nil, err
	}
	if err := checkFleet(req.Schedule, fleet); err != nil {
		return nil, err
	}
	if err := checkClaimRegistry(metas[registryKey], fleet); err != nil {
		return nil, err
	}
	floor, gen, err := s.claimFloor(ctx, req, metas[identityKey])
	if err != nil {
		return nil, fmt.Errorf("dynamostore: claim in %s: %w", req.Range, err)
	}
	if err := s.checkJournalTable(ctx); err != nil {
		return nil, err
	}
	cands, skipped, ahead := candidates(req, items, rand.IntN(req.Range.Size()))
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("dynamostore: claim in %s: %w", req.Range, err)
		}
		l, err := s.tryClaim(ctx, req, c, floor)
		if errors.Is(err, errUnarchivable) {
			s.log.Error("machine number passed over: its journal entry cannot be archived; delete the journal table's item of that entry if it was made by hand (docs/lease-stores.md)",
				"machine", c.n, "entry", c.seen.journal.seq, "journal_table", s.cfg.JournalTable)
			skipped.add("passed over: the journal table holds another claim's entry under the number of the one to archive")
			continue
		}
		if l != nil {
			l.Schedule = req.Schedule
			if err := s.remember(l, gen); err != nil {
				return nil, err
			}
			if err := s.confirmRegistry(ctx, l); err != nil {
				return nil, err
			}
		}
		switch {
		case err != nil:
			return nil, err
		case l != nil:
			return l, nil
		}
		skipped.add("taken by another claimer meanwhile")
	}
	return nil, fmt.Errorf("%w: range %s region %d: %s; %s", lease.ErrNoFreeNumber, req.Range, s.region, skipped,
		lease.NoFreeAdvice(req, ahead, skipped.total()-ahead.N, "widen the range, release or unquarantine numbers, or wait for leases to expire"))
}

// A candidate is a number to try, with its item as the scan saw it.
type candidate struct {
	n       int
	expired bool // absent or lease_expiry < NowMs: the claim by expiry
	seen    item // the item read (exists false: none)
}

// reasons counts why numbers were passed over.
type reasons map[string]int

func (r reasons) add(why string) { r[why]++ }

// total is how many numbers were passed over.
func (r reasons) total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

func (r reasons) String() string {
	if len(r) == 0 {
		return "no numbers"
	}
	var parts []string
	for why, n := range r {
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// candidates orders the numbers of req.Range for claiming, starting at
// offset start: expired or absent first, then free with a mark within
// MaxAhead, lowest mark first. It counts the numbers passed over, and
// apart those passed over for a mark too far ahead.
func candidates(req lease.ClaimRequest, items []item, start int) ([]candidate, reasons, lease.Ahead) {
	byN := make(map[int]item, len(items))
	for _, it := range items {
		byN[it.machine] = it
	}
	skipped := reasons{}
	var far lease.Ahead
	var expired, ahead []candidate
	size := req.Range.Size()
	for i := range size {
		n := req.Range.Lo + (start+i)%size
		it := byN[n]
		switch {
		case slices.Contains(req.Exclude, n):
			skipped.add("excluded")
		case !it.exists || (it.expiryMs < req.NowMs && !it.quarantined):
			expired = append(expired, candidate{n: n, expired: true, seen: it})
		case it.quarantined:
			skipped.add("quarantined")
		case it.holder != "":
			skipped.add("held")
		case it.expiryMs-req.NowMs > req.MaxAhead.Milliseconds():
			skipped.add(fmt.Sprintf("free but with a mark more than %s ahead of the claimer's clock", req.MaxAhead))
			far.Add(it.expiryMs)
		default:
			ahead = append(ahead, candidate{n: n, seen: it})
		}
	}
	slices.SortStableFunc(ahead, func(a, b candidate) int { return int(a.seen.expiryMs - b.seen.expiryMs) })
	return append(expired, ahead...), skipped, far
}

// tryClaim claims one candidate: a lease, or nil if the condition failed.
// floorMs (0: none) is the restore floor: the lease starts at or above it.
func (s *Store) tryClaim(ctx context.Context, req lease.ClaimRequest, c candidate, floorMs int64) (*lease.Lease, error) {
	start := req.NowMs
	nonce := lease.NewNonce()
	seen := c.seen
	token := seen.epoch + 1
	vals := map[string]types.AttributeValue{
		":me": str(req.Holder), ":tok": num(int64(token)), ":nonce": str(nonce),
	}
	expr, cond := claimUpdate, claimAbsent
	var prevMarkMs int64
	if seen.exists {
		prevMarkMs = seen.expiryMs
		vals[":seen"] = num(seen.expiryMs)
		if c.expired {
			cond = claimExpired
			vals[":now"] = num(req.NowMs)
		} else {
			cond, start = claimFreeAhead, seen.expiryMs
		}
		if seen.hasEpoch {
			cond += " AND lease_epoch = :epoch"
			vals[":epoch"] = num(int64(seen.epoch))
		} else {
			cond += " AND attribute_not_exists(lease_epoch)"
		}
		if seen.hasJournal {
			cur := seen.journal
			cond += " AND jcur.#jn = :jseq AND jcur.#jt = :jtok AND jcur.#jc = :jclaim"
			vals[":jseq"], vals[":jtok"], vals[":jclaim"] = num(cur.seq), num(int64(cur.e.Token)), str(cur.e.Claim)
			if cur.e.End == lease.EndNone {
				cond += " AND attribute_not_exists(jcur.#je)"
			} else {
				cond += " AND jcur.#je = :jwas"
				vals[":jwas"] = str(cur.e.End)
			}
		} else {
			cond += " AND attribute_not_exists(jcur)"
		}
	}
	seq, err := s.nextSeq(ctx, c)
	if err != nil {
		return nil, err
	}
	start = max(start, floorMs)
	expiry := max(req.NowMs+req.LeaseFor.Milliseconds(), start)
	vals[":expiry"] = num(expiry)
	vals[":entry"] = newEntry(seq, token, nonce, req, prevMarkMs, start)
	sp := s.before(c.n)
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(c.n),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            journalNames(cond),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	mine := func(it item) bool { return ownAttempt(it, nonce, req.Holder, expiry) }
	// What the write made of the item, when it committed: the condition
	// pinned everything the lease is built from.
	it := item{exists: true, machine: c.n, holder: req.Holder, epoch: token, expiryMs: expiry, nonce: nonce}
	if err == nil {
		s.saw(sp, c.n, it)
		s.trimJournal(ctx, c.n, seq)
		return s.claimed(req, c.n, it, start), nil
	}
	if failed, old := conditionFailed(err); failed {
		// An SDK retry of a claim that committed fails its own condition:
		// the item returned then names this claim.
		var perr error
		if it, perr = s.parseItem(old); perr == nil && len(old) > 0 {
			s.saw(sp, c.n, it) // a sign is noticed; the claim goes on, and remember refuses it
		}
		if !mine(it) {
			s.log.Debug("claim lost a race", "machine", c.n, "holder", req.Holder)
			return nil, nil
		}
	} else {
		it, rerr := s.reread(c.n)
		if rerr == nil {
			s.saw(sp, c.n, it)
		}
		if rerr != nil || !mine(it) {
			if rerr != nil {
				err = fmt.Errorf("%w (re-reading it failed too: %v)", err, rerr)
			}
			return nil, fmt.Errorf("dynamostore: claim machine %d region %d: %w; if it committed, the number frees itself at %s; retry",
				c.n, s.region, err, lease.FormatMs(expiry))
		}
		s.log.Info("claim of unknown outcome had committed", "machine", c.n, "holder", req.Holder, "epoch", it.epoch)
		s.trimJournal(ctx, c.n, seq)
		return s.claimed(req, c.n, it, start), nil
	}
	s.trimJournal(ctx, c.n, seq)
	return s.claimed(req, c.n, it, start), nil
}

// nextSeq archives the jcur the scan read for candidate c (archive.go) and
// returns the sequence number of the claim's own entry: one more than the
// highest of jcur's and the newest entry's in the journal table (a
// consistent Query, made while the archive write is under way). The
// journal table's can be the higher after the lease item went back to an
// older copy — a point-in-time restore of the lease table alone, an item
// put back by hand, an item deleted — and the new entry must come after
// the claims that copy no longer knows. It returns errUnarchivable if the
// journal table holds another claim's entry under jcur's number.
func (s *Store) nextSeq(ctx context.Context, c candidate) (int64, error) {
	type newest struct {
		seq int64
		err error
	}
	q := make(chan newest, 1)
	go func() {
		seq, err := s.newestArchived(ctx, c.n)
		q <- newest{seq, err}
	}()
	var seq int64
	var aerr error
	if c.seen.hasJournal {
		aerr = s.archive(ctx, c.n, c.seen.journal)
		seq = c.seen.journal.seq
	}
	got := <-q
	switch {
	case aerr != nil:
		return 0, aerr
	case got.err != nil:
		return 0, fmt.Errorf("dynamostore: claim machine %d region %d: %w; retry", c.n, s.region, got.err)
	}
	return max(seq, got.seq) + 1, nil
}

func (s *Store) claimed(req lease.ClaimRequest, n int, it item, startMs int64) *lease.Lease {
	l := &lease.Lease{Machine: n, Region: s.region, Holder: req.Holder, Token: it.epoch, StartMs: startMs, MarkMs: it.expiryMs, Claim: it.nonce}
	s.log.Info("claimed machine number", "machine", n, "holder", req.Holder, "epoch", it.epoch,
		"start", lease.FormatMs(startMs), "mark", lease.FormatMs(it.expiryMs))
	return l
}
