package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// The journal is in two places. The newest entry of a number is in the
// number's own lease item, as jcur, so the claim's conditional UpdateItem
// writes it (DynamoDB has no atomic write across items but
// TransactWriteItems, which dynalite does not implement) and the ending
// writes (Release, Quarantine, RaiseMarks) end it in theirs. Every older
// entry is in the journal table (Config.JournalTable), one item each:
//
//	pk  S  "<keyspace>/<machine>" (partition key)
//	n   N  the entry's sequence number (sort key)
//	…      the entry's fields, as in jcur
//
// A claim copies the jcur it read into the journal table (archive.go)
// before its UpdateItem overwrites it, so the lease item holds one entry
// whatever the journal's length, and a renewal, which DynamoDB bills by the
// item's size, stays one write unit.
//
// An entry's fields (short names: an item's size counts every attribute
// name):
//
//	n   N  the journal sequence number, 1 for the number's first claim
//	t   N  the token (lease_epoch after the claim)
//	c   S  the claim's nonce (claim_nonce)
//	h   S  the holder
//	cm  N  ClaimedMs       pm N  PrevMarkMs       sm N  StartMs
//	e   S  End (absent: none)   em N  EndMs   ed N  EndedMs
const (
	attrJournal = "jcur"
	attrPK      = "pk"

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
	// endSetMark ends jcur's holding (:jend, lease.End*) at the store's
	// clock (:jnow) and at the mark the operand that follows it names
	// (EndMs): every ending write knows the mark it ends at.
	endSetMark = "jcur.#je = :jend, jcur.#jed = :jnow, jcur.#jem = "
)

// journalFields maps each expression attribute name of the journal to the
// field it stands for.
var journalFields = map[string]string{"#jn": jSeq, "#jt": jToken, "#jc": jClaim, "#je": jEnd, "#jem": jEndMs, "#jed": jEndedMs}

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
	return it.exists && it.holder != "" && !it.quarantined && it.hasJournal && it.journal.e.Token == it.epoch
}

// newEntry is the map of a claim's entry.
func newEntry(seq int64, token uint64, nonce string, req lease.ClaimRequest, prevMarkMs, startMs int64) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		jSeq: num(seq), jToken: num(int64(token)), jClaim: str(nonce), jHolder: str(req.Holder),
		jClaimed: num(req.NowMs), jPrevMark: num(prevMarkMs), jStart: num(startMs),
	}}
}

// journalKey is the journal table's partition key of number n.
func (s *Store) journalKey(n int) types.AttributeValue {
	return str(strconv.Itoa(s.region) + "/" + strconv.Itoa(n))
}

// History implements lease.Journal: number machine's jcur (a consistent
// GetItem of its lease item) and the newest entries archived in the journal
// table (a consistent Query, newest first), merged by sequence number; the
// newest lease.JournalRetention of them, oldest claim first. Archived
// entries older than those (a delete that failed, numbers skipped after a
// restore) are never returned. Where the two places hold an entry of one
// number, one claim, the copy with an end wins; if both have one, the
// archived copy, which the next claim made of jcur as it was then (jcur
// is never changed after that: it can only differ after the lease table
// alone was restored to an older backup, and then it is the stale copy);
// if neither, jcur. Where they hold different claims under one number (an
// edit by hand), jcur wins.
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return nil, err
	}
	it, err := s.read(ctx, machine)
	if err != nil {
		return nil, err
	}
	archived, err := s.archived(ctx, machine, lease.JournalRetention)
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]entry, len(archived)+1)
	for _, e := range archived {
		bySeq[e.seq] = e
	}
	if it.hasJournal {
		cur := it.journal
		if old, ok := bySeq[cur.seq]; !ok || !old.sameClaim(cur) || old.e.End == lease.EndNone {
			bySeq[cur.seq] = cur
		}
	}
	seqs := make([]int64, 0, len(bySeq))
	for n := range bySeq {
		seqs = append(seqs, n)
	}
	slices.Sort(seqs)
	if len(seqs) > lease.JournalRetention {
		seqs = seqs[len(seqs)-lease.JournalRetention:]
	}
	out := make([]lease.JournalEntry, len(seqs))
	for i, n := range seqs {
		out[i] = bySeq[n].e
	}
	return out, nil
}

// archived returns up to limit of number machine's entries in the journal
// table, newest first, from a consistent Query.
func (s *Store) archived(ctx context.Context, machine, limit int) ([]entry, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JournalTable),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s.journalKey(machine)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	var out []entry
	for len(out) < limit {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, s.journalTableErr(fmt.Errorf("dynamostore: read the journal of machine %d region %d: %w", machine, s.region, err))
		}
		for _, m := range page.Items {
			e, err := s.parseEntry(machine, m)
			if err != nil {
				return nil, fmt.Errorf("dynamostore: machine %d region %d: journal table %s: %w", machine, s.region, s.cfg.JournalTable, err)
			}
			out = append(out, e)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = aws.Int32(int32(limit - len(out)))
	}
	return out, nil
}

// An entry is one parsed journal entry with its sequence number.
type entry struct {
	seq int64
	e   lease.JournalEntry
	raw map[string]types.AttributeValue // its fields as stored
}

// sameClaim says whether e and o are copies of one claim's entry.
func (e entry) sameClaim(o entry) bool {
	return e.seq == o.seq && e.e.Token == o.e.Token && e.e.Claim == o.e.Claim
}

// parseEntry reads one entry's fields (a jcur map, or a journal table item,
// whose key pk it ignores).
func (s *Store) parseEntry(machine int, m map[string]types.AttributeValue) (entry, error) {
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
			return entry{}, err
		}
		if !ok && f.must {
			return entry{}, fmt.Errorf("no field %s", f.name)
		}
		*f.to = v
	}
	if token < 0 || seq < 1 {
		return entry{}, fmt.Errorf("token %d, sequence number %d: not an entry this store wrote", token, seq)
	}
	e.Token = uint64(token)
	for _, f := range []struct {
		name string
		to   *string
	}{{jClaim, &e.Claim}, {jHolder, &e.Holder}, {jEnd, &e.End}} {
		if v, ok := m[f.name]; ok {
			sv, ok := v.(*types.AttributeValueMemberS)
			if !ok {
				return entry{}, fmt.Errorf("field %s is %T, not a string", f.name, v)
			}
			*f.to = sv.Value
		}
	}
	raw := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		if k != attrPK {
			raw[k] = v
		}
	}
	return entry{seq: seq, e: e, raw: raw}, nil
}

// parseJournalHead reads jcur, the entry a claim archives and pins.
func (s *Store) parseJournalHead(it *item, m map[string]types.AttributeValue) error {
	v, ok := m[attrJournal]
	if !ok {
		return nil
	}
	mv, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return fmt.Errorf("dynamostore: machine_id %d: %s is %T, not a map: the item holds attributes this store did not write", it.machine, attrJournal, v)
	}
	e, err := s.parseEntry(it.machine, mv.Value)
	if err != nil {
		return fmt.Errorf("dynamostore: machine %d region %d: %s: %w", it.machine, s.region, attrJournal, err)
	}
	it.hasJournal, it.journal = true, e
	return nil
}

// isNotFound reports a table that does not exist.
func isNotFound(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}
