package dynamostore

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// The journal lives in the number's own item, so the claim's conditional
// UpdateItem writes its entry (DynamoDB has no atomic write across items
// but TransactWriteItems, which dynalite does not implement):
//
//	jcur       M  the newest claim's entry
//	j00 … j62  M  the 63 claims before it: entry number n at j(n mod 63)
//
// A claim moves jcur to its slot and writes its own entry as jcur in the
// same UpdateExpression (SET jNN = jcur, jcur = :entry: DynamoDB evaluates
// every operand on the item as it was before the update), overwriting the
// entry 64 claims older: JournalRetention entries, no sweeper. The ending
// writes (Release, Quarantine, RaiseMarks) set fields of jcur, a path that
// does not depend on the entry's number.
//
// An entry's fields (short names: an item's size counts every attribute
// name, and every renewal pays for the whole item):
//
//	n   N  the journal sequence number, 1 for the item's first claim
//	t   N  the token (lease_epoch after the claim)
//	c   S  the claim's nonce (claim_nonce)
//	h   S  the holder
//	cm  N  ClaimedMs       pm N  PrevMarkMs       sm N  StartMs
//	e   S  End (absent: none)   em N  EndMs   ed N  EndedMs
const (
	attrJournal  = "jcur"
	journalSlots = lease.JournalRetention - 1

	jSeq, jToken, jClaim, jHolder = "n", "t", "c", "h"
	jClaimed, jPrevMark, jStart   = "cm", "pm", "sm"
	jEnd, jEndMs, jEndedMs        = "e", "em", "ed"
)

// Pieces of the expressions that touch the journal. Their field names go
// through expression attribute names (#jn …), which journalNames fills in.
const (
	// heldWithEntry holds when the item is held, not quarantined, by the
	// claim whose entry jcur is: an ending write may then set jcur's end.
	heldWithEntry = "(attribute_exists(holder) AND holder <> :q AND jcur.#jt = lease_epoch)"
	// endSet ends jcur's holding (:jend, lease.End*) at the store's clock
	// (:jnow); endSetMark adds EndMs, the operand that follows it.
	endSet     = "jcur.#je = :jend, jcur.#jed = :jnow"
	endSetMark = endSet + ", jcur.#jem = "
)

// journalFields maps each expression attribute name of the journal to the
// field it stands for.
var journalFields = map[string]string{"#jn": jSeq, "#jt": jToken, "#je": jEnd, "#jem": jEndMs, "#jed": jEndedMs}

var journalName = regexp.MustCompile(`#j[a-z]+`)

// journalNames returns the expression attribute names exprs use (DynamoDB
// refuses names an expression does not use), nil if none.
func journalNames(exprs ...string) map[string]string {
	var names map[string]string
	for _, e := range exprs {
		for _, n := range journalName.FindAllString(e, -1) {
			if names == nil {
				names = map[string]string{}
			}
			names[n] = journalFields[n]
		}
	}
	return names
}

// slotAttr is the attribute name of slot i (0 ≤ i < journalSlots).
func slotAttr(i int64) string { return fmt.Sprintf("j%02d", i) }

// endVals adds the values of an ending write of kind end (lease.End*) to
// vals, with the store's wall clock as EndedMs.
func endVals(vals map[string]types.AttributeValue, end string) map[string]types.AttributeValue {
	vals[":jend"] = str(end)
	vals[":jnow"] = num(time.Now().UnixMilli())
	return vals
}

// heldEntry says whether it is held (by a holder, not a quarantine) under
// a claim whose entry is jcur: the state heldWithEntry tests.
func heldEntry(it item) bool {
	return it.exists && it.holder != "" && !it.quarantined && it.hasJournal && it.journalToken == it.epoch
}

// newEntry is the map of a claim's entry.
func newEntry(seq int64, token uint64, nonce string, req lease.ClaimRequest, prevMarkMs, startMs int64) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		jSeq: num(seq), jToken: num(int64(token)), jClaim: str(nonce), jHolder: str(req.Holder),
		jClaimed: num(req.NowMs), jPrevMark: num(prevMarkMs), jStart: num(startMs),
	}}
}

// History implements lease.Journal: the entries of number machine's item
// (a consistent GetItem), oldest claim first.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return nil, err
	}
	m, err := s.readRaw(ctx, machine)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		seq int64
		e   lease.JournalEntry
	}
	var got []numbered
	add := func(name string) error {
		v, ok := m[name]
		if !ok {
			return nil
		}
		mv, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return fmt.Errorf("dynamostore: machine %d region %d: journal attribute %s is %T, not a map: the item holds attributes this store did not write", machine, s.region, name, v)
		}
		seq, e, err := s.parseEntry(machine, mv.Value)
		if err != nil {
			return fmt.Errorf("dynamostore: machine %d region %d: journal attribute %s: %w", machine, s.region, name, err)
		}
		got = append(got, numbered{seq, e})
		return nil
	}
	if err := add(attrJournal); err != nil {
		return nil, err
	}
	for i := range int64(journalSlots) {
		if err := add(slotAttr(i)); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(got, func(a, b numbered) int { return int(a.seq - b.seq) })
	if len(got) > lease.JournalRetention { // only an item edited by hand
		got = got[len(got)-lease.JournalRetention:]
	}
	out := make([]lease.JournalEntry, len(got))
	for i, g := range got {
		out[i] = g.e
	}
	return out, nil
}

// parseEntry reads one entry map.
func (s *Store) parseEntry(machine int, m map[string]types.AttributeValue) (int64, lease.JournalEntry, error) {
	e := lease.JournalEntry{Machine: machine, Region: s.region}
	var seq, token int64
	for _, f := range []struct {
		name string
		to   *int64
		must bool
	}{
		{jSeq, &seq, true}, {jToken, &token, true}, {jClaimed, &e.ClaimedMs, true}, {jPrevMark, &e.PrevMarkMs, true},
		{jStart, &e.StartMs, true}, {jEndMs, &e.EndMs, false}, {jEndedMs, &e.EndedMs, false},
	} {
		v, ok, err := getNum(m, f.name)
		if err != nil {
			return 0, e, err
		}
		if !ok && f.must {
			return 0, e, fmt.Errorf("no field %s", f.name)
		}
		*f.to = v
	}
	if token < 0 {
		return 0, e, fmt.Errorf("negative token %d", token)
	}
	e.Token = uint64(token)
	for _, f := range []struct {
		name string
		to   *string
	}{{jClaim, &e.Claim}, {jHolder, &e.Holder}, {jEnd, &e.End}} {
		if v, ok := m[f.name]; ok {
			sv, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				return 0, e, fmt.Errorf("field %s is %T, not a string", f.name, v)
			}
			*f.to = sv.Value
		}
	}
	return seq, e, nil
}

// parseJournalHead reads, of jcur, what a claim pins: its number and token.
func parseJournalHead(it *item, m map[string]types.AttributeValue) error {
	v, ok := m[attrJournal]
	if !ok {
		return nil
	}
	mv, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return fmt.Errorf("dynamostore: machine_id %d: %s is %T, not a map: the item holds attributes this store did not write", it.machine, attrJournal, v)
	}
	seq, okSeq, err := getNum(mv.Value, jSeq)
	if err != nil {
		return err
	}
	tok, okTok, err := getNum(mv.Value, jToken)
	if err != nil {
		return err
	}
	if !okSeq || !okTok || seq < 1 || tok < 0 {
		return fmt.Errorf("dynamostore: machine_id %d: %s has no valid %s and %s: the item holds attributes this store did not write", it.machine, attrJournal, jSeq, jToken)
	}
	it.hasJournal, it.journalSeq, it.journalToken = true, seq, uint64(tok)
	return nil
}
