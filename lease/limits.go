package lease

import "fmt"

// Unlimited, given as the limit of CheckMachine, CheckRange or
// ClaimRequest.Check, stands for a store that takes any non-negative
// machine number (etcd, PostgreSQL); a store with a fixed number of
// machine numbers per region (DynamoDB: 1024) gives that number instead.
const Unlimited = 0

// CheckMachine returns an error wrapping ErrInvalid unless n is a machine
// number a store with limit numbers per region holds: 0 ≤ n, and n < limit
// unless limit is Unlimited. Every store checks each number it is given
// (Get, Quarantine, a lease) with it.
func CheckMachine(n, limit int) error {
	switch {
	case limit != Unlimited && (n < 0 || n >= limit):
		return fmt.Errorf("%w: machine number %d: give one from 0 to %d", ErrInvalid, n, limit-1)
	case n < 0:
		return fmt.Errorf("%w: machine number %d is negative: give 0 or more", ErrInvalid, n)
	}
	return nil
}

// CheckRange returns an error wrapping ErrInvalid unless r is a non-empty,
// non-negative range, ending below limit unless limit is Unlimited (see
// Range.Validate). Every store checks each range it is given (Claim,
// RaiseMarks) with it.
func CheckRange(r Range, limit int) error {
	if limit != Unlimited {
		return r.Validate(limit)
	}
	if r.Lo < 0 || r.Hi < r.Lo {
		return fmt.Errorf("%w: machine range %d–%d must satisfy 0 ≤ lo ≤ hi", ErrInvalid, r.Lo, r.Hi)
	}
	return nil
}
