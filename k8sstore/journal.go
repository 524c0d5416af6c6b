package k8sstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// The journal (lease.Journal) of number n lives in n's own lease object,
// in the annotation snowfence.io/journal: a JSON array of entries, oldest
// claim first, holding the newest lease.JournalRetention of them. A claim
// writes its entry in the same JSON patch (or Create) as its record, so
// no claim commits without its entry and no entry exists for a claim
// that did not; a release, a quarantine and a raise of the marks end the
// newest entry in their own patch, when it is the holding they end (the
// entry of the record's epoch and claim nonce, not ended yet) — atomic,
// as zkstore's multi-op. Renewals leave it as it is.
//
// The journal is not tested by the patch, only replaced: the patch's
// tests of the resourceVersion and of the exact record string pin it,
// for the journal is written only beside a record, and every record
// string is written once (it carries a fresh nonce), so the record read
// determines the journal read with it.
//
// Size: an entry is about 230 bytes with a 45-character holder, so 64 of
// them are about 15 KB. maxJournalBytes bounds the annotation whatever
// the holder names: the oldest entries beyond it are dropped (the newest
// is always kept), so with the record (well under 1 KB) the object's
// annotations stay far below the API server's 256 KiB limit on them. A
// renewal reads the whole object, journal included.

// journalKey is the annotation holding a lease object's journal.
const journalKey = "snowfence.io/journal"

// maxJournalBytes bounds the journal annotation (the API server refuses
// an object whose annotations total more than 256 KiB).
const maxJournalBytes = 64 << 10

// entry is a journal entry as the annotation holds it; its number and
// keyspace are the object's.
type entry struct {
	Token      uint64 `json:"token"`
	Claim      string `json:"claim,omitempty"`
	Holder     string `json:"holder"`
	ClaimedMs  int64  `json:"claimed_ms"`
	PrevMarkMs int64  `json:"prev_mark_ms"`
	StartMs    int64  `json:"start_ms"`
	End        string `json:"end,omitempty"`
	EndMs      int64  `json:"end_ms,omitempty"`
	EndedMs    int64  `json:"ended_ms,omitempty"`
}

// public is e as lease.JournalEntry, of number n of keyspace region.
func (e entry) public(n, region int) lease.JournalEntry {
	return lease.JournalEntry{Machine: n, Region: region, Token: e.Token, Claim: e.Claim, Holder: e.Holder,
		ClaimedMs: e.ClaimedMs, PrevMarkMs: e.PrevMarkMs, StartMs: e.StartMs, End: e.End, EndMs: e.EndMs, EndedMs: e.EndedMs}
}

// parseJournal decodes a journal annotation ("" is an empty journal).
func parseJournal(raw string) ([]entry, error) {
	if raw == "" {
		return nil, nil
	}
	var es []entry
	if err := json.Unmarshal([]byte(raw), &es); err != nil {
		return nil, err
	}
	return es, nil
}

// encodeJournal encodes the newest lease.JournalRetention entries of es,
// oldest first, dropping older ones while the annotation would exceed
// maxJournalBytes (the newest is always kept).
func encodeJournal(es []entry) string {
	if len(es) > lease.JournalRetention {
		es = es[len(es)-lease.JournalRetention:]
	}
	parts := make([][]byte, len(es))
	size, first := 2, len(es) // "[" and "]"
	for i := len(es) - 1; i >= 0; i-- {
		b, _ := json.Marshal(es[i])
		if i < len(es)-1 && size+len(b)+1 > maxJournalBytes {
			break
		}
		parts[i], size, first = b, size+len(b)+1, i
	}
	out := []byte{'['}
	for i := first; i < len(es); i++ {
		if i > first {
			out = append(out, ',')
		}
		out = append(out, parts[i]...)
	}
	return string(append(out, ']'))
}

// journalOp is the patch operation that writes raw as the journal ("add"
// replaces an annotation that exists and makes one that does not).
func journalOp(raw string) patchOp {
	return patchOp{Op: "add", Path: annotationPath(journalKey), Value: raw}
}

// claimJournal is the journal of o, read for a claim of number n, with
// the claim's entry e added (and the oldest dropped past the retention).
// A journal annotation that does not parse (written by hand) is replaced
// by a new journal, logged: it held no entry this store can read.
func (s *Store) claimJournal(n int, o object, e entry) string {
	es, err := parseJournal(o.journal)
	if err != nil {
		s.log.Error("journal annotation does not parse: the claim starts a new journal", "machine", n, "object", s.name(n), "error", err)
		es = nil
	}
	return encodeJournal(append(es, e))
}

// endOps are the operations that end, in a write planned on o, the
// holding of o's record in the journal — the newest entry, if it is the
// record's claim (epoch and nonce) and not ended yet — as end (lease.End*)
// at the mark endMs, at the writer's clock nowMs; none if there is no such
// entry (a record older than the journal, an entry already ended) or the
// journal does not parse (logged: the write goes on without it).
func (s *Store) endOps(n int, o object, end string, endMs, nowMs int64) []patchOp {
	r := o.rec
	if !o.exists || r.Claim == "" {
		return nil
	}
	es, err := parseJournal(o.journal)
	if err != nil {
		s.log.Error("journal annotation does not parse: the write goes on without ending its entry", "machine", n,
			"object", s.name(n), "error", err)
		return nil
	}
	if len(es) == 0 {
		return nil
	}
	last := &es[len(es)-1]
	if last.Token != r.Epoch || last.Claim != r.Claim || last.End != lease.EndNone {
		return nil
	}
	last.End, last.EndMs, last.EndedMs = end, endMs, nowMs
	return []patchOp{journalOp(encodeJournal(es))}
}

// History implements lease.Journal: the retained entries of number
// machine in the store's keyspace, oldest claim first, from its object's
// journal annotation (a quorum read); none for a number without an object.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return nil, err
	}
	o, err := s.get(ctx, machine)
	if err != nil {
		return nil, err
	}
	es, err := parseJournal(o.journal)
	if err != nil {
		return nil, fmt.Errorf("%w: lease %s in namespace %s holds %q in %s, not a journal this store wrote: %v; the next claim "+
			"replaces it with a new journal", ErrNotRecord, s.name(machine), s.cfg.Namespace, o.journal, journalKey, err)
	}
	out := make([]lease.JournalEntry, len(es))
	for i, e := range es {
		out[i] = e.public(machine, s.region)
	}
	return out, nil
}
