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
