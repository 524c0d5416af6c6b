package etcdstore

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/revert"
)

// unusedCompares are the compares that make a fleet-schedule change at once
// (SetFleetScheduleUnused) conditional on the store holding no lease
// record: no key of any keyspace, from up to to, and no journal entry under
// journal. A holder that claimed between the operator's read and this
// write may already issue under the old schedule, and its IDs and marks
// are what the notice the change skips protects.
// Load-bearing for uniqueness: change only with scripts/prove-search unused.
func unusedCompares(from, to, journal string) []clientv3.Cmp {
	if revert.Unused {
		return nil
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(from).WithRange(to), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(journal).WithPrefix(), "=", 0),
	}
}
