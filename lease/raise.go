package lease

import (
	"context"
	"fmt"
)

// RaiseAllMarks is RaiseMarks over r in every keyspace region's holders
// lease in for layout steps 0..steps-1 (KeyspaceOf): the runbook's step
// after restoring a table store from a backup, which takes back every
// keyspace of the table at once. Give steps as the most layout steps any
// schedule the fleet ran had — not what the restored fleet schedule says,
// which may be older than the numbers holders still issue on — or MaxSteps
// when unsure. st is a store of region's step-0 keyspace (Config.Region =
// region). It returns how many records it changed, and stops at the first
// error.
func RaiseAllMarks(ctx context.Context, st Admin, region, steps int, r Range, markMs int64) (int, error) {
	idxs, err := RaiseKeyspaces(region, steps)
	if err != nil {
		return 0, err
	}
	total := 0
	for s, idx := range idxs {
		ks := st
		if s > 0 {
			if ks, err = st.AdminKeyspace(idx); err != nil {
				return total, err
			}
		}
		n, err := ks.RaiseMarks(ctx, r, markMs)
		if ks != st {
			ks.Close()
		}
		total += n
		if err != nil {
			return total, fmt.Errorf("raising the marks of layout step %d: %w", s, err)
		}
	}
	return total, nil
}

// RaiseKeyspaces returns the keyspaces RaiseAllMarks raises for region
// and steps, in step order: KeyspaceOf of each layout step 0..steps-1, or
// region alone when it is too high for a second step (a one-layout
// fleet's).
func RaiseKeyspaces(region, steps int) ([]int, error) {
	if steps < 1 || steps > MaxSteps {
		return nil, fmt.Errorf("%w: %d layout steps; give 1 to %d", ErrInvalid, steps, MaxSteps)
	}
	if region >= KeyspaceStride {
		// Only a one-layout fleet has such a region (StartKeeper refuses
		// it under a schedule of more steps): its keyspace is the region.
		return []int{region}, nil
	}
	idxs := []int{region}
	for s := 1; s < steps; s++ {
		idx, err := KeyspaceOf(s, region)
		if err != nil {
			return nil, err
		}
		idxs = append(idxs, idx)
	}
	return idxs, nil
}
