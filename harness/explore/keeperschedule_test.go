package explore

import (
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// setKeeperSchedule gives the keeper the schedule its generator mints
// under: its claims carry it, and the stores compare it with the fleet's.
func setKeeperSchedule(kc *lease.KeeperConfig, s snowfence.Schedule) { kc.Schedule = s }
