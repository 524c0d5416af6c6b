package explore

import (
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// setKeeperSchedule gives the keeper the schedule its generator mints
// under, so that it claims with it.
func setKeeperSchedule(kc *lease.KeeperConfig, s snowfence.Schedule) {
	// TODO(keeper): KeeperConfig has no schedule yet; set it here once it
	// has, so claims carry it and the stores compare it with the fleet's.
}
