package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// HandQuarantine quarantines number n as an operator types it into the
// DynamoDB console or CLI: holder "QUARANTINED", lease_expiry 2100-01-01,
// epoch + 1, and no kept mark.
func HandQuarantine(ctx context.Context, s *Store, n int) error {
	_, err := s.update(ctx, n, "SET holder = :q, lease_expiry = :far ADD lease_epoch :one", "", map[string]types.AttributeValue{
		":q": str(lease.QuarantineHolder), ":far": num(lease.QuarantineExpiryMs), ":one": num(1),
	})
	return err
}

// ClaimAsIfFree is the write of a claim whose scan found number n absent
// (its condition: no item): the second half of a claim that lost the race
// between its scan and its write, played without the scan.
func ClaimAsIfFree(ctx context.Context, s *Store, req lease.ClaimRequest, n int) (*lease.Lease, error) {
	return s.tryClaim(ctx, req, candidate{n: n, expired: true}, 0)
}

// A Seen is one number's item as a claim's scan read it.
type Seen struct {
	n  int
	it item
}

// ReadSeen reads number n's item as a claim's scan would.
func ReadSeen(ctx context.Context, s *Store, n int) (Seen, error) {
	it, err := s.read(ctx, n)
	return Seen{n: n, it: it}, err
}

// ArchiveSeen is the archive step of a claim whose scan read seen.
func ArchiveSeen(ctx context.Context, s *Store, seen Seen) error {
	return s.archive(ctx, seen.n, seen.it.journal)
}

// ClaimSeen is the claim's write (archive and UpdateItem) for a claim whose
// scan read seen: nil, nil if its condition failed.
func ClaimSeen(ctx context.Context, s *Store, req lease.ClaimRequest, seen Seen) (*lease.Lease, error) {
	expired := !seen.it.exists || (seen.it.expiryMs < req.NowMs && !seen.it.quarantined)
	return s.tryClaim(ctx, req, candidate{n: seen.n, expired: expired, seen: seen.it}, 0)
}

// ErrUnarchivable is the archive step's error for a journal table holding
// another claim's entry under the number of the one to archive.
var ErrUnarchivable = errUnarchivable
