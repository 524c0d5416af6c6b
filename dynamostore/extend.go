package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// The renewal: holder and epoch must match and the expiry move forward;
// claimMatches adds the claim's own nonce, since an epoch can repeat once
// the table went back in time and a holder name can be shared; notBelow
// (notBelowKeep) that the mark is no lower than the one last seen under the
// claim (signs.go); and withRenewal the renewal value, since a cloned
// holder process shares the nonce too. Each renewal writes a fresh renewal
// value.
const (
	renewUpdate  = "SET lease_expiry = :new_expiry, renewal = :renewal"
	renewCond    = "holder = :me AND lease_epoch = :my_epoch AND lease_expiry < :new_expiry"
	claimMatches = " AND claim_nonce = :my_claim"
	notBelow     = " AND lease_expiry >= :keep"
)

// notBelowKeep adds to a renewal's condition on l that the item's mark is
// not below keep, the one this Store value last saw under l's claim
// (tablewatch.Span.Held; 0: none, no compare), and its value to vals: a
// lower one means the table went back (signs.go).
func notBelowKeep(cond string, vals map[string]types.AttributeValue, keep int64) string {
	if keep <= 0 {
		return cond
	}
	vals[":keep"] = num(keep)
	return cond + notBelow
}

// Extend raises l's mark, which is also its lease's expiry, to markMs with
// the table's renewal: a conditional UpdateItem on holder, epoch, claim
// nonce and renewal value (one this Store value wrote or sent for l,
// lease.Renewals), writing a fresh renewal value, returned in the lease's
// Renewal. In a lease table the lease lives exactly as long as its mark,
// so leaseFor is not used: the keeper's Reserve (default LeaseFor) sets
// how far ahead markMs is. A mark already at or above markMs (an SDK retry that
// committed, RaiseMarks) is kept, not lowered, and returned in MarkMs; the
// renewal value is then written alone, in a second UpdateItem, since every
// renewal must change it.
//
// Before the write it reads the fleet schedule (lease.ErrSchedule once it
// differs from l.Schedule; see extendSchedule for why a read is enough) and
// checks the table's identity (lease.ErrRestored for a lease claimed before
// a restore this store noticed; restore.go).
//
// It also refuses to renew a mark found below the one this Store value
// last saw under l's claim (signs.go), in the renewal and in the write of
// the value alone.
//
// Errors: lease.ErrLost if the item names another holder or epoch (or is
// gone, and this Store value never saw it) or holds another renewal value
// (a second process renews the same claim: a clone),
// lease.ErrQuarantined if the number is quarantined, lease.ErrRestored if
// the item shows the table went back in time since this Store value saw
// it (gone, a lower epoch, l's epoch under another claim, a lower mark
// under l's claim: signs.go) or holds a renewal value this Store value
// wrote before its last one (lease.Renewals.Check). After any other
// error the item is re-read with a consistent read to decide; if that fails
// too the error is returned and the outcome is unknown.
func (s *Store) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := s.checkLease(l); err != nil {
		return nil, err
	}
	if err := s.extendSchedule(ctx, l, markMs); err != nil {
		return nil, err
	}
	if err := s.extendIdentity(ctx, l); err != nil {
		s.forget(l)
		return nil, err
	}
	accepted := s.renewals.Accepted(l)
	renewal := s.renewals.Next(l)
	vals := map[string]types.AttributeValue{":me": str(l.Holder), ":my_epoch": num(int64(l.Token)), ":new_expiry": num(markMs), ":renewal": str(renewal)}
	sp := s.before(l.Machine)
	keep := sp.Held(l.Machine, l.Token, l.Claim)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(l.Machine),
		UpdateExpression:                    aws.String(renewUpdate),
		ConditionExpression:                 aws.String(withRenewal(notBelowKeep(withClaim(renewCond, vals, l), vals, keep), vals, accepted)),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		s.renewals.Acked(l, renewal)
		nl := *l
		nl.MarkMs, nl.Renewal = markMs, renewal
		s.saw(sp, l.Machine, item{exists: true, machine: l.Machine, holder: l.Holder, epoch: l.Token, expiryMs: markMs, nonce: l.Claim, renewal: renewal})
		return &nl, nil
	}
	it, why := s.afterFailure(sp, l, err)
	if why == nil {
		// This renewal's own value (an SDK retry or a re-read of a write
		// that committed), an earlier one's of this Store value, or
		// another process's renewing the same claim.
		why = s.checkRenewal(sp, l, it.renewal)
	}
	if why == nil {
		switch {
		case it.expiryMs >= markMs && it.renewal == renewal:
			s.renewals.Acked(l, renewal) // this renewal's write had committed
			nl := *l
			nl.MarkMs, nl.Renewal = it.expiryMs, renewal
			return &nl, nil
		case it.expiryMs >= markMs:
			// The mark is already past the one asked for (RaiseMarks of a
			// free number, an earlier renewal): every renewal must still
			// change the value, or two copies of this holder could both go
			// on renewing unseen.
			var nl *lease.Lease
			if nl, why = s.renewValue(ctx, sp, l, keep, accepted, renewal); why == nil {
				return nl, nil
			}
		default:
			why = fmt.Errorf("dynamostore: renew machine %d epoch %d to %s: %w; the outcome is unknown: retry, and stop issuing at the mark %s",
				l.Machine, l.Token, lease.FormatMs(markMs), err, lease.FormatMs(l.MarkMs))
		}
	}
	if errors.Is(why, lease.ErrLost) || errors.Is(why, lease.ErrQuarantined) || errors.Is(why, lease.ErrRestored) {
		s.forget(l)
		s.renewals.Forget(l)
	}
	s.log.Warn("renewal failed", "machine", l.Machine, "holder", l.Holder, "epoch", l.Token,
		"mark", lease.FormatMs(l.MarkMs), "wanted", lease.FormatMs(markMs), "error", why)
	return nil, why
}

// renewValue writes renewal as l's renewal value and nothing else, on the
// renewal's condition but the mark's moving forward: the item still names
// l's holder, epoch and claim, holds one of accepted, and its mark is not
// below keep (the one last seen under l's claim, sp's: signs.go). It
// returns the lease with the item's mark.
func (s *Store) renewValue(ctx context.Context, sp tablewatch.Span, l *lease.Lease, keep int64, accepted []string, renewal string) (*lease.Lease, error) {
	vals := map[string]types.AttributeValue{":me": str(l.Holder), ":my_epoch": num(int64(l.Token)), ":renewal": str(renewal)}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(l.Machine),
		UpdateExpression:                    aws.String("SET renewal = :renewal"),
		ConditionExpression:                 aws.String(withRenewal(notBelowKeep(withClaim("holder = :me AND lease_epoch = :my_epoch", vals, l), vals, keep), vals, accepted)),
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var it item
	if err == nil {
		if it, err = s.parseItem(out.Attributes); err != nil {
			return nil, err
		}
		s.saw(sp, l.Machine, it)
	} else {
		var why error
		if it, why = s.afterFailure(sp, l, err); why != nil {
			return nil, why
		}
		if it.renewal != renewal { // not this write's, committed with its reply lost
			if why = s.checkRenewal(sp, l, it.renewal); why != nil {
				return nil, why
			}
			return nil, fmt.Errorf("dynamostore: renew machine %d epoch %d: writing its renewal value: %w; the outcome is unknown: retry, "+
				"and stop issuing at the mark %s", l.Machine, l.Token, err, lease.FormatMs(l.MarkMs))
		}
	}
	s.renewals.Acked(l, renewal)
	nl := *l
	nl.MarkMs, nl.Renewal = it.expiryMs, renewal
	return &nl, nil
}

// afterFailure reads the item after a failed conditional write on l (from
// the failure itself, or with a consistent read) and returns it if it still
// names l's holder and epoch, or the typed error saying why not:
// lease.ErrRestored first if it shows the table went back in time since sp
// was taken, before the write was sent (signs.go).
func (s *Store) afterFailure(sp tablewatch.Span, l *lease.Lease, err error) (item, error) {
	failed, old := conditionFailed(err)
	var it item
	var perr error
	if failed && len(old) > 0 {
		it, perr = s.parseItem(old)
	} else {
		it, perr = s.reread(l.Machine)
	}
	if perr != nil {
		return item{}, fmt.Errorf("dynamostore: machine %d epoch %d: %w (and reading the item to decide failed: %v); the outcome is unknown: retry",
			l.Machine, l.Token, err, perr)
	}
	if rerr := s.saw(sp, l.Machine, it); rerr != nil {
		return it, rerr
	}
	return it, owns(l, it)
}

// owns says whether it still belongs to l: nil, or lease.ErrQuarantined or
// lease.ErrLost with what the item says now.
func owns(l *lease.Lease, it item) error {
	switch {
	case !it.exists:
		return fmt.Errorf("%w: machine %d has no item any more (deleted by hand?); stop issuing on it and claim another", lease.ErrLost, l.Machine)
	case it.quarantined:
		return fmt.Errorf("%w: machine %d (epoch %d); stop issuing on it and claim another", lease.ErrQuarantined, l.Machine, it.epoch)
	case it.holder != l.Holder || it.epoch != l.Token:
		return fmt.Errorf("%w: machine %d is now held by %q with epoch %d, not %q epoch %d; stop issuing on it and claim another",
			lease.ErrLost, l.Machine, it.holder, it.epoch, l.Holder, l.Token)
	case otherClaim(it, l):
		return fmt.Errorf("%w: machine %d is held under %q epoch %d by another claim than this lease's (the epoch repeated after "+
			"the table went back in time, or another claimer shares the holder name); stop issuing on it and claim another",
			lease.ErrLost, l.Machine, it.holder, it.epoch)
	}
	return nil
}

func (s *Store) checkLease(l *lease.Lease) error {
	if l == nil {
		return fmt.Errorf("%w: nil lease", lease.ErrInvalid)
	}
	if l.Region != s.region {
		return fmt.Errorf("%w: lease of region %d given to the store of region %d", lease.ErrInvalid, l.Region, s.region)
	}
	return lease.CheckMachine(l.Machine, Machines)
}
