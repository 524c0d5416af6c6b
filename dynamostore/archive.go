package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// Archiving. A claim over a number whose item has a jcur first copies that
// jcur, as its scan read it, into the journal table (PutItem), and only
// then makes its conditional UpdateItem, which overwrites jcur. The claim's
// condition pins what every other write to jcur changes: jcur's n (every
// claim writes a new one), lease_epoch (quarantine and raise-marks, by the
// store or by hand, add one) and jcur's end (a release keeps the epoch, and
// may keep the mark). So when the UpdateItem commits, the jcur it
// overwrote is exactly the copy archived; when anything changed in between
// it fails, and the number is passed over like any other lost race. The
// one write that changes an ended jcur, a quarantined holder's release
// (its EndMs becomes where the holder stopped), is made only while the
// number is quarantined and held by the quarantine, where no claim reads
// it as claimable: any claim reads jcur after it.
//
// The copy never replaces one that is better: its condition lets it write
// only where there is no entry of that number yet, or an entry of the same
// claim (token and nonce) without an end. An entry of the same claim that
// has an end already counts as archived (a second claimer that read the
// entry later, after its release; the SDK's retry of a PutItem that
// committed; a lease table restored to before the end). An entry of
// another claim under the same number (an edit by hand, or a restore the
// store never noticed) is not overwritten and the number is not claimed:
// no claim may overwrite an entry that is not archived.

// ErrNoJournalTable is matched (errors.Is) by the error of a claim, or of
// History, on a deployment whose journal table does not exist: the
// NoJournalTableError.
var ErrNoJournalTable = errors.New("dynamostore: the journal table does not exist")

// A NoJournalTableError says the journal table (Config.JournalTable) of
// the lease table does not exist, so the store cannot keep its journal and
// refuses to claim (it never claims without journaling). It matches
// ErrNoJournalTable and lease.ErrInvalid, so a keeper fails at start with
// it instead of retrying.
type NoJournalTableError struct {
	// Table is the journal table's name, LeaseTable the lease table's.
	Table, LeaseTable string
	// Err is DynamoDB's error.
	Err error
}

func (e *NoJournalTableError) Error() string {
	return fmt.Sprintf("dynamostore: the journal table %s of lease table %s does not exist (%v): run `snowfence leases init` "+
		"(or Store.CreateTable) with this version to create it; the lease table and its items are kept", e.Table, e.LeaseTable, e.Err)
}

// Unwrap returns ErrNoJournalTable, lease.ErrInvalid and DynamoDB's error.
func (e *NoJournalTableError) Unwrap() []error {
	return []error{ErrNoJournalTable, lease.ErrInvalid, e.Err}
}

// journalTableErr turns err into a NoJournalTableError when it says the
// journal table does not exist.
func (s *Store) journalTableErr(err error) error {
	if isNotFound(err) {
		return &NoJournalTableError{Table: s.cfg.JournalTable, LeaseTable: s.table, Err: err}
	}
	return err
}

// checkJournalTable makes sure, once per table (shared with the Store
// values Keyspace opened), that the journal table exists, with a
// DescribeTable: the first claim on a deployment without one fails, even
// for numbers that have no entry to archive yet.
func (s *Store) checkJournalTable(ctx context.Context) error {
	id := s.id
	id.mu.Lock()
	ok := id.journalChecked
	id.mu.Unlock()
	if ok {
		return nil
	}
	_, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.cfg.JournalTable)})
	if err != nil {
		return s.journalTableErr(fmt.Errorf("dynamostore: describe the journal table %s: %w; check the credentials allow dynamodb:DescribeTable on it", s.cfg.JournalTable, err))
	}
	id.mu.Lock()
	id.journalChecked = true
	id.mu.Unlock()
	return nil
}

// errUnarchivable is archive's answer when the journal table holds another
// claim's entry under the number of the one to archive.
var errUnarchivable = errors.New("the journal table holds another claim's entry under this number")

// archive copies cur, number n's jcur as the claim's scan read it, into the
// journal table. It returns nil once the journal table holds cur or a copy
// of the same claim with an end; errUnarchivable if it holds another
// claim's entry under cur's number; any other error if the outcome is
// unknown (the claim must not proceed then).
func (s *Store) archive(ctx context.Context, n int, cur entry) error {
	m := make(map[string]types.AttributeValue, len(cur.raw)+1)
	for k, v := range cur.raw {
		m[k] = v
	}
	m[attrPK] = s.journalKey(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.cfg.JournalTable),
		Item:                                m,
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR (#jt = :t AND #jc = :c AND attribute_not_exists(#je))"),
		ExpressionAttributeNames:            map[string]string{"#jt": jToken, "#jc": jClaim, "#je": jEnd},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":t": num(int64(cur.e.Token)), ":c": str(cur.e.Claim)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	failed, old := conditionFailed(err)
	if !failed || len(old) == 0 {
		// The outcome is unknown (or DynamoDB did not say what the
		// condition saw): read what is there.
		got, rerr := s.readArchived(n, cur.seq)
		if rerr != nil {
			return fmt.Errorf("dynamostore: archive the journal entry %d of machine %d region %d: %w (re-reading it failed too: %v)",
				cur.seq, n, s.region, s.journalTableErr(err), rerr)
		}
		old = got
	}
	if len(old) == 0 {
		return fmt.Errorf("dynamostore: archive the journal entry %d of machine %d region %d: %w", cur.seq, n, s.region, s.journalTableErr(err))
	}
	there, perr := s.parseEntry(n, old)
	switch {
	case perr != nil:
		return fmt.Errorf("dynamostore: machine %d region %d: journal table %s: entry %d: %w", n, s.region, s.cfg.JournalTable, cur.seq, perr)
	case !there.sameClaim(cur):
		return errUnarchivable
	case there.e.End != lease.EndNone || cur.e.End == lease.EndNone:
		return nil // archived: with an end, or as cur is
	}
	return fmt.Errorf("dynamostore: archive the journal entry %d of machine %d region %d: %w", cur.seq, n, s.region, s.journalTableErr(err))
}

// readArchived is a consistent GetItem of number n's entry seq in the
// journal table (nil: none), on a context of its own.
func (s *Store) readArchived(n int, seq int64) (map[string]types.AttributeValue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.cfg.JournalTable),
		Key:            map[string]types.AttributeValue{attrPK: s.journalKey(n), jSeq: num(seq)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// newestArchived returns the highest sequence number among number n's
// entries in the journal table (0: none), from a consistent Query.
func (s *Store) newestArchived(ctx context.Context, n int) (int64, error) {
	got, err := s.archived(ctx, n, 1)
	if err != nil || len(got) == 0 {
		return 0, err
	}
	return got[0].seq, nil
}

// trimJournal deletes number n's archived entry seq − JournalRetention,
// the one the claim of entry seq pushed out of the newest
// JournalRetention; best effort (History never returns an older entry, so
// one left behind only costs its storage).
func (s *Store) trimJournal(ctx context.Context, n int, seq int64) {
	old := seq - lease.JournalRetention
	if old < 1 {
		return
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.cfg.JournalTable),
		Key:       map[string]types.AttributeValue{attrPK: s.journalKey(n), jSeq: num(old)},
	})
	if err != nil {
		s.log.Warn("could not delete a journal entry past retention; it is left in the journal table, unused", "machine", n, "entry", old, "error", err)
	}
}
