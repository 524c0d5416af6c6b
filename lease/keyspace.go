package lease

import "fmt"

// KeyspaceStride separates the keyspaces of a schedule's layout steps: the
// numbers a holder of region r leases for step s ≥ 1 of its schedule live in
// keyspace s×KeyspaceStride + r, those for step 0 in keyspace r. A store's
// keyspace is what its Config.Region selects (etcd: the key prefix's region
// segment; PostgreSQL: the region column; DynamoDB: machine_id / 1024).
//
// Each step has numbers of its own because two steps' holders must never
// fight for one key: across a cutover from v1 to v2 a holder keeps its v1
// number until the cutover and claims a v2 number before it, and the v2
// number 5 of one holder and the v1 number 5 of another can be held at the
// same time (their IDs cannot collide: every v1 ID's timestamp lies before
// the cutover, every v2 ID's at or after it). With one keyspace, 1,024 v1
// holders would leave no v2 number free.
//
// Step 0 keeps keyspace r, so a fleet whose schedule has one step leases
// where it always has.
const KeyspaceStride = 1 << 16

// MaxSteps is the number of layout steps a schedule of a holder with leases
// can have: every step's keyspaces must stay below 2^20, the most a
// DynamoDB lease table can address (dynamostore.MaxRegion).
const MaxSteps = 16

// KeyspaceOf returns the keyspace that holds region's machine numbers for
// step (an index into the schedule's steps). It fails with ErrInvalid for a
// region at or above KeyspaceStride, whose keyspace would be another step's,
// or a step outside 0..MaxSteps-1.
func KeyspaceOf(step, region int) (int, error) {
	switch {
	case step < 0 || step >= MaxSteps:
		return 0, fmt.Errorf("%w: layout step %d: a schedule of a leasing holder has at most %d steps", ErrInvalid, step, MaxSteps)
	case region < 0 || region >= KeyspaceStride:
		return 0, fmt.Errorf("%w: region %d: leasing holders' regions are 0-%d, so that every layout step has a keyspace of its own", ErrInvalid, region, KeyspaceStride-1)
	}
	return step*KeyspaceStride + region, nil
}
