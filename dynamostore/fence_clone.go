package dynamostore

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/revert"
)

// withRenewal adds to a condition on l the compare of the item's renewal
// value with accepted (lease.Renewals.Accepted; "" stands for none, as
// after a claim or in an item written before renewal values), their values
// to vals (nothing under revert.Clone).
// A clone's renewal values fail the compare rather than renew beside l.
// Load-bearing for uniqueness: change only with scripts/prove-search clone.
func withRenewal(cond string, vals map[string]types.AttributeValue, accepted []string) string {
	if revert.Clone {
		return cond
	}
	var alts, in []string
	for i, v := range accepted {
		if v == "" {
			alts = append(alts, "attribute_not_exists(renewal)")
			continue
		}
		k := fmt.Sprintf(":renewal%d", i)
		vals[k] = str(v)
		in = append(in, k)
	}
	if len(in) > 0 {
		alts = append(alts, "renewal IN ("+strings.Join(in, ", ")+")")
	}
	return cond + " AND (" + strings.Join(alts, " OR ") + ")"
}
