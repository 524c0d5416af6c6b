package dynamostore

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// dynalite has no global tables, so the refusal is tested on the
// descriptions DynamoDB returns: a replica list (version 2019.11.21) or
// the legacy GlobalTableVersion alone.
func TestNotGlobal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      types.TableDescription
		refuse bool
	}{
		{"single-region", types.TableDescription{TableId: aws.String("t")}, false},
		{"replicas", types.TableDescription{Replicas: []types.ReplicaDescription{{RegionName: aws.String("eu-west-1")}}}, true},
		{"version only", types.TableDescription{GlobalTableVersion: aws.String("2019.11.21")}, true},
	} {
		err := notGlobal("leases", &tc.d)
		if got := err != nil; got != tc.refuse {
			t.Errorf("%s: notGlobal = %v, want refused %v", tc.name, err, tc.refuse)
		}
		if err != nil && !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v is not lease.ErrInvalid", tc.name, err)
		}
	}
}
