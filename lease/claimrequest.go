package lease

import "fmt"

// Check returns r with its schedule in canonical form (CanonicalSchedule;
// "v1" for the empty string), or an error wrapping ErrInvalid that says
// what to fix. Every store's Claim calls it before anything else, so every
// store refuses the same requests: no holder, the holder name
// QuarantineHolder, a NowMs that is not a positive Unix ms reading, a
// LeaseFor that is not positive, a negative MaxAhead, a schedule that does
// not parse, and a range CheckRange refuses for limit (the store's number
// of machine numbers per region, or Unlimited).
func (r ClaimRequest) Check(limit int) (ClaimRequest, error) {
	switch {
	case r.Holder == "":
		return r, fmt.Errorf("%w: claim without a holder: set ClaimRequest.Holder (lease.ThisProcess names this process)", ErrInvalid)
	case r.Holder == QuarantineHolder:
		return r, fmt.Errorf("%w: claim by holder %q, the name a quarantined number's holder carries: choose another holder name", ErrInvalid, r.Holder)
	case r.NowMs <= 0:
		return r, fmt.Errorf("%w: claim with NowMs %d: pass the claimer's wall clock in Unix ms", ErrInvalid, r.NowMs)
	case r.LeaseFor <= 0:
		return r, fmt.Errorf("%w: claim with LeaseFor %v: give the lease a positive length", ErrInvalid, r.LeaseFor)
	case r.MaxAhead < 0:
		return r, fmt.Errorf("%w: claim with MaxAhead %v: give zero or a positive duration", ErrInvalid, r.MaxAhead)
	}
	if err := CheckRange(r.Range, limit); err != nil {
		return r, err
	}
	canon, err := CanonicalSchedule(r.Schedule)
	if err != nil {
		return r, fmt.Errorf("%w: the claimer's schedule %q: %v; give a schedule as snowfence.Schedule.String writes it, or none for v1", ErrInvalid, r.Schedule, err)
	}
	r.Schedule = canon
	return r, nil
}
