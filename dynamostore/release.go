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

// Release gives l's number up: it removes the holder and records markMs
// (at least l.StartMs) as lease_expiry, conditioned on holder, epoch,
// claim nonce and renewal value (as Extend's, though a value this Store
// value wrote before its last one — an item put back by a restore — is
// taken too, lease.Renewals.Own: signs.go) and on the stored mark being
// no higher than l's own (l.MarkMs) and markMs being at or above the floor
// RaiseMarks leaves (mark_floor). Otherwise — someone raised the mark — it
// removes the holder and keeps the stored mark; but if the item holds a
// renewal value this Store value did not write (a second process renews
// the same claim: a clone), it changes nothing and returns lease.ErrLost. If the number was quarantined out from under l, it lowers
// the mark the quarantine keeps to markMs, so the number is claimable sooner
// once unquarantined, and the end of l's journal entry (which the
// quarantine ended at l's reservation) with it, and returns nil.
//
// The same write ends the lease's journal entry (jcur, written by its
// claim, which the condition on the claim's nonce pins): End released,
// EndMs the mark the release leaves — markMs, or the higher mark it kept.
//
// Each release writes a nonce of its own (release_nonce), by which a retry
// whose first attempt committed recognises it; a second Release of the
// same lease gets lease.ErrLost.
//
// Errors: lease.ErrLost if l no longer holds the number, lease.ErrRestored
// if the item shows the table went back in time (signs.go). After any other
// error the item is re-read to decide; if that fails the outcome is unknown,
// and the number frees itself at its mark.
func (s *Store) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.checkLease(l); err != nil {
		return err
	}
	last := max(markMs, l.StartMs)
	err := s.release(ctx, l, last)
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		s.forget(l)
		s.renewals.Forget(l)
	}
	if err != nil {
		s.log.Warn("release failed", "machine", l.Machine, "holder", l.Holder, "epoch", l.Token, "mark", lease.FormatMs(last), "error", err)
		return err
	}
	s.log.Info("released machine number", "machine", l.Machine, "holder", l.Holder, "epoch", l.Token, "mark", lease.FormatMs(last))
	return nil
}

func (s *Store) release(ctx context.Context, l *lease.Lease, last int64) error {
	nonce := lease.NewNonce()
	// The values this Store value wrote for l, earlier ones too: a release
	// of a row put back to one of those still records the end of what l
	// issued (signs.go); a clone's value is refused.
	accepted := s.renewals.Own(l)
	vals := map[string]types.AttributeValue{
		":me": str(l.Holder), ":my_epoch": num(int64(l.Token)), ":last": num(last), ":mine": num(max(l.MarkMs, last)), ":rn": str(nonce),
	}
	sp := s.before(l.Machine)
	_, err := s.update(ctx, l.Machine, "REMOVE holder SET lease_expiry = :last, release_nonce = :rn, "+endSetMark+":last",
		withRenewal(withClaim("holder = :me AND lease_epoch = :my_epoch AND lease_expiry <= :mine AND "+aboveFloor, vals, l), vals, accepted),
		endVals(vals, lease.EndReleased))
	if err == nil {
		s.saw(sp, l.Machine, item{exists: true, machine: l.Machine, epoch: l.Token, expiryMs: last, nonce: l.Claim})
		return nil
	}
	failed, _ := conditionFailed(err)
	it, why := s.afterFailure(sp, l, err)
	switch {
	case it.quarantined && it.epoch == l.Token+1:
		// The quarantine that fenced l: l's reservation is what it keeps,
		// and l's entry, which the quarantine ended at the mark l held,
		// ends where l says it stopped (as etcdstore's release after a
		// quarantine does), or the next holder's interval, which starts at
		// the mark kept here, would overlap it.
		expr, cond := "SET quarantined_mark = :last", "holder = :q AND lease_epoch = :qe AND quarantined_mark <= :mine AND "+aboveFloor
		qvals := map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":qe": num(int64(it.epoch)), ":last": num(last), ":mine": num(max(l.MarkMs, last))}
		if it.hasJournal && it.journal.e.Token == l.Token && it.journal.e.End == lease.EndQuarantined {
			// Only an entry the quarantine ended: no claim has archived it
			// (none is made on a quarantined number, and Unquarantine
			// removes the holder this write is conditioned on), so its
			// archived copy, made later, will hold this end too.
			expr += ", jcur.#jem = :last"
			qvals[":my_epoch"], qvals[":jq"] = num(int64(l.Token)), str(lease.EndQuarantined)
			cond = withClaim(cond+" AND jcur.#jt = :my_epoch AND jcur.#je = :jq", qvals, l)
		}
		_, qerr := s.update(ctx, l.Machine, expr, cond, qvals)
		if f, _ := conditionFailed(qerr); qerr != nil && !f {
			return fmt.Errorf("dynamostore: release quarantined machine %d: %w", l.Machine, qerr)
		}
		return nil
	case it.exists && it.holder == "" && it.epoch == l.Token && it.releaseNonce == nonce:
		// This release had committed: an error of unknown outcome, or an
		// SDK retry of a release whose reply was lost failing its own
		// condition.
		return nil
	case why != nil:
		return why
	case !failed:
		return fmt.Errorf("dynamostore: release machine %d epoch %d: %w; retry, or let the number free itself at %s", l.Machine, l.Token, err, lease.FormatMs(it.expiryMs))
	}
	if err := s.checkRenewal(sp, l, it.renewal); err != nil {
		return err // another copy of l's holder renewed it: its mark stays, and so does it
	}
	// Still l's, with a mark someone raised above l's own: keep it.
	vals = map[string]types.AttributeValue{":me": str(l.Holder), ":my_epoch": num(int64(l.Token)), ":rn": str(nonce)}
	_, err = s.update(ctx, l.Machine, "REMOVE holder SET release_nonce = :rn, "+endSetMark+"lease_expiry",
		withRenewal(withClaim("holder = :me AND lease_epoch = :my_epoch", vals, l), vals, accepted), endVals(vals, lease.EndReleased))
	if failed, old := conditionFailed(err); failed {
		if it, perr := s.parseItem(old); perr == nil && it.holder == "" && it.epoch == l.Token && it.releaseNonce == nonce {
			return nil // an SDK retry of this write, which had committed
		}
		return fmt.Errorf("%w: machine %d changed hands during its release", lease.ErrLost, l.Machine)
	} else if err != nil {
		return fmt.Errorf("dynamostore: release machine %d epoch %d: %w; retry, or let the number free itself at %s", l.Machine, l.Token, err, lease.FormatMs(it.expiryMs))
	}
	return nil
}

// aboveFloor holds when :last is at or above the floor RaiseMarks left.
const aboveFloor = "(attribute_not_exists(mark_floor) OR mark_floor <= :last)"

// update is a conditional UpdateItem on number n that returns the old item
// when the condition fails. The journal's expression attribute names
// (journal.go) are filled in from expr and cond.
func (s *Store) update(ctx context.Context, n int, expr, cond string, vals map[string]types.AttributeValue) (*dynamodb.UpdateItemOutput, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(n),
		UpdateExpression:                    aws.String(expr),
		ExpressionAttributeNames:            journalNames(expr, cond),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	return s.db.UpdateItem(ctx, in)
}
