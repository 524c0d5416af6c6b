package dynamostore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// RunbookQuarantine runs seed 002's runbook command 3 as an operator types
// it: no kept mark.
func RunbookQuarantine(ctx context.Context, s *Store, n int) error {
	_, err := s.update(ctx, n, "SET holder = :q, lease_expiry = :far ADD lease_epoch :one", "", map[string]types.AttributeValue{
		":q": str(Quarantined), ":far": num(QuarantineExpiryMs), ":one": num(1),
	})
	return err
}
