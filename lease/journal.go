package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// JournalRetention is how many journal entries a store keeps per machine
// number and keyspace: the newest ones. The claim that writes one more drops
// the oldest in the same atomic write, so a number's journal never grows
// past it and no sweeper is needed. At the default timings a holder keeps a
// number for as long as its process lives, so 64 entries are 64 restarts or
// losses of that number: weeks to years of history for a steady fleet, hours
// for one that crash-loops (docs/runbook.md says how to tell).
const JournalRetention = 64

// How a holding ended, as the journal says (JournalEntry.End, Interval.State).
const (
	// EndNone: no write ended it; the holder still holds the number, or its
	// lease ran out (Interval tells which).
	EndNone = ""
	// EndReleased: the holder released the number (Store.Release); EndMs is
	// the mark the release wrote.
	EndReleased = "released"
	// EndQuarantined: the operator quarantined the number while it was held
	// (Store.Quarantine); the holder stopped at its mark. EndMs is that
	// mark, or the mark a release by the holder after the quarantine wrote
	// (a store that lets such a release through records it); zero only for
	// an ending that could not know it (a quarantine made by hand), when
	// the end is derived as for EndNone.
	EndQuarantined = "quarantined"
	// EndRaised: the operator raised the marks (Store.RaiseMarks) over the
	// newest entry while it was not yet ended — held, or lapsed with no
	// claim since — fencing the holder; EndMs is the mark it held then, so
	// the raise's gap is nobody's.
	EndRaised = "raised"
	// StateHolding and StateLost are the two states Intervals derives for
	// an entry with EndNone: still held, or taken over (or fenced) after its
	// lease ran out.
	StateHolding = "holding"
	StateLost    = "lost"
)

// A JournalEntry is one claim of one machine number, written by the store in
// the same atomic write as the claim itself (the etcd transaction, the
// PostgreSQL statement, the DynamoDB conditional update), so a claim that
// succeeded always has one. Renewals write nothing to it: while a holder
// holds, its entry's end is the record's mark.
type JournalEntry struct {
	// Machine and Region are the number and the keyspace (Store.Keyspace)
	// it was claimed in.
	Machine int `json:"machine"`
	Region  int `json:"region"`
	// Token and Claim are the claim's fencing token and claim identity
	// (Lease.Token, Lease.Claim).
	Token uint64 `json:"token"`
	Claim string `json:"claim,omitempty"`
	// Holder is the claimer (ClaimRequest.Holder).
	Holder string `json:"holder"`
	// ClaimedMs is the claimer's clock at the claim (ClaimRequest.NowMs).
	ClaimedMs int64 `json:"claimed_ms"`
	// PrevMarkMs is the mark the claim read in its atomic write: every
	// earlier holder of the number issued only timestamps below it.
	PrevMarkMs int64 `json:"prev_mark_ms"`
	// StartMs is the lease's StartMs: this holder issued only timestamps
	// at or above it.
	StartMs int64 `json:"start_ms"`
	// End says how the holding ended, when a write ended it (EndReleased,
	// EndQuarantined, EndRaised); EndNone otherwise.
	End string `json:"end,omitempty"`
	// EndMs is the mark at the end where the ending write knew it exactly:
	// the mark a release wrote, the mark a raise replaced, and — in a
	// store whose quarantine knows it — the holder's mark a quarantine
	// kept. Zero otherwise (the end is then the next entry's PrevMarkMs,
	// or the record's mark).
	EndMs int64 `json:"end_ms,omitempty"`
	// EndedMs is when the ending write was made, on the writer's clock; it
	// is for people, never for deciding anything.
	EndedMs int64 `json:"ended_ms,omitempty"`
}

// A Journal is a store's record of who held each machine number when.
type Journal interface {
	// History returns the retained journal of one number in the store's
	// keyspace, oldest claim first (the order the claims were made in);
	// none for a number never claimed.
	History(ctx context.Context, machine int) ([]JournalEntry, error)
}

// An Interval is the stretch of timestamps one holder of a number may have
// issued: [FromMs, UntilMs), empty when UntilMs ≤ FromMs (a claim that was
// never renewed).
type Interval struct {
	JournalEntry
	FromMs, UntilMs int64
	// State is EndReleased, EndQuarantined, EndRaised, StateHolding (the
	// current holder: UntilMs is its mark now, and moves) or StateLost.
	State string `json:"state"`
}

// Intervals derives each entry's interval from the journal of one number
// and the number's current record. An entry's interval starts at its
// StartMs and ends at its EndMs if the ending write knew it, else at the
// next entry's PrevMarkMs (the next claimer read the final mark), else —
// for the newest entry — at the record's mark. (A quarantined entry's
// EndMs counts when set: a raise of the marks while the number stays
// quarantined moves the record's mark and the next claim's PrevMarkMs
// above what the quarantined holder could issue.) Because every claim starts
// at or above the mark it read, the intervals never overlap; CheckIntervals
// says so of a journal that breaks that.
func Intervals(entries []JournalEntry, rec Record) []Interval {
	out := make([]Interval, len(entries))
	for i, e := range entries {
		iv := Interval{JournalEntry: e, FromMs: e.StartMs, State: e.End}
		last := i == len(entries)-1
		switch {
		case e.End == EndReleased || e.End == EndRaised || (e.End == EndQuarantined && e.EndMs != 0):
			iv.UntilMs = e.EndMs
		case !last:
			iv.UntilMs = entries[i+1].PrevMarkMs
		default:
			iv.UntilMs = rec.MarkMs
		}
		if e.End == EndNone {
			iv.State = StateLost
			if last && rec.Held() && rec.Token == e.Token && (rec.Claim == "" || e.Claim == "" || rec.Claim == e.Claim) {
				iv.State = StateHolding
			}
		}
		out[i] = iv
	}
	return out
}

// CheckIntervals returns an error naming the first two intervals that
// overlap (a journal that cannot answer "who" with one holder); nil if
// none do. Empty intervals overlap nothing.
func CheckIntervals(ivs []Interval) error {
	var prev *Interval
	for i := range ivs {
		iv := &ivs[i]
		if iv.UntilMs <= iv.FromMs {
			continue
		}
		if prev != nil && iv.FromMs < prev.UntilMs {
			return fmt.Errorf("lease: journal of machine %d region %d: token %d (%s, %s–%s) overlaps token %d (%s, from %s)",
				iv.Machine, iv.Region, prev.Token, prev.Holder, FormatMs(prev.FromMs), FormatMs(prev.UntilMs),
				iv.Token, iv.Holder, FormatMs(iv.FromMs))
		}
		prev = iv
	}
	return nil
}

// ErrNotInJournal is returned by Who for a timestamp no retained journal
// entry covers.
var ErrNotInJournal = errors.New("lease: not in the journal")

// Who returns the interval that covers timestamp ms (Unix ms) among ivs, the
// intervals of one number: exactly one, since intervals do not overlap.
// Otherwise it returns an error matching ErrNotInJournal that says where ms
// falls: before the oldest entry retained, between two holders (no holder
// the journal knows issued it), or past the current mark.
func Who(ivs []Interval, ms int64) (Interval, error) {
	if len(ivs) == 0 {
		return Interval{}, fmt.Errorf("%w: no claim of this number is recorded; the journal keeps the newest %d claims of each number",
			ErrNotInJournal, JournalRetention)
	}
	var found []Interval
	for _, iv := range ivs {
		if iv.FromMs <= ms && ms < iv.UntilMs {
			found = append(found, iv)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return Interval{}, fmt.Errorf("lease: the journal names %d holders for %s (tokens %d and %d): it is inconsistent; report it",
			len(found), FormatMs(ms), found[0].Token, found[1].Token)
	}
	first, last := ivs[0], ivs[len(ivs)-1]
	switch {
	case ms < first.FromMs:
		return Interval{}, fmt.Errorf("%w: %s is before the oldest claim retained (token %d, from %s); the journal keeps the newest %d claims of each number",
			ErrNotInJournal, FormatMs(ms), first.Token, FormatMs(first.FromMs), JournalRetention)
	case ms >= last.UntilMs && last.UntilMs >= last.FromMs:
		return Interval{}, fmt.Errorf("%w: %s is at or past the number's mark %s: no holder may have issued it yet; "+
			"an ID from there was not issued through this store (another store, a restore, or a holder bypassing the fence)",
			ErrNotInJournal, FormatMs(ms), FormatMs(last.UntilMs))
	}
	return Interval{}, fmt.Errorf("%w: %s falls between holders: no holder the journal knows issued timestamps there "+
		"(marks raised over it after a restore, or an ID not issued through this store)", ErrNotInJournal, FormatMs(ms))
}

// HolderParts splits a holder name made by ThisProcess (and the keeper's
// default, with "/kN") into host, process id and process start; ok is false
// for a holder named some other way.
func HolderParts(holder string) (host string, pid int, startMs int64, ok bool) {
	parts := strings.Split(holder, "/")
	if len(parts) < 3 {
		return "", 0, 0, false
	}
	p, perr := strconv.Atoi(strings.TrimPrefix(parts[1], "pid-"))
	s, serr := strconv.ParseInt(parts[2], 10, 64)
	if perr != nil || serr != nil || !strings.HasPrefix(parts[1], "pid-") {
		return "", 0, 0, false
	}
	return parts[0], p, s, true
}
