package metrics

import (
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease/registry"
)

// RegionNumbers returns what Config.RegionNumbers answers for a holder on
// the fleet schedule sched whose store's region registry reads reg: the
// total is the region numbers of sched's last layout (1 << RegionBits),
// left those of them no region of reg has had (registry.Registry.Left;
// retired numbers are never reused). Without region bits, or with no
// registry written (reg.Version 0), it returns 0, 0: neither series is
// exported.
//
// sched is the keeper's (lease.Keeper.Schedule); reg a registry read from
// the holder's own store (lease.Store.RegistryReader) and kept in memory,
// read again now and then, as serve does every 30 s.
func RegionNumbers(sched snowfence.Schedule, reg registry.Registry) (left, total int) {
	steps := sched.Steps()
	if len(steps) == 0 || reg.Version == 0 {
		return 0, 0
	}
	bits := steps[len(steps)-1].Layout.RegionBits
	if bits == 0 {
		return 0, 0
	}
	total = 1 << bits
	return reg.Left(total), total
}
