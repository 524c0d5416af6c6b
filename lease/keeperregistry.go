package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/snowfence/snowfence/lease/registry"
)

// The region registry's rules — a region is one the registry has and in
// service, its holders lease from its home store, and every holder starts
// on the registry's schedule where its store's record is that schedule too
// — keep two holders from leasing one region's numbers apart. They are
// checked where every holder passes, whatever started it (serve,
// node.Start, a Go service calling StartKeeper): in StartKeeper, from the
// keeper's own store's copy of the registry, before its first claim. The
// last rule is also the stores' own: every claim compares the store's
// fleet schedule record with the schedule its copy of the registry records
// (CheckRecordedSchedule), in the claim's own atomic write where the store
// can (etcd, PostgreSQL), so a registry written after a keeper started is
// seen at its next claim.

// checkRegistry reads the region registry from the keeper's store
// (Store.RegistryReader; every keyspace of a store shares one copy) and
// refuses a holder the registry
// keeps out: KeeperConfig.Region not in it (registry.ErrUnknownRegion) or retired
// (registry.ErrRegionRetired), a store that is not the region's home (registry.ErrWrongHome,
// registry.CheckHome with the store's RegistryIdentity), or, when the registry
// records the fleet schedule, a schedule or store record that is not it
// (ErrSchedule, CheckHolderSchedule). A registry that records none yet
// (written before it kept one, or by registry.AddRegion) is not compared while at
// most one of its regions is in service, as serve never compared it (a
// retired region's IDs are all in the past); with two or more in service
// the holder is refused until the schedule is recorded (snowfence
// schedule set naming every region's store), because nothing else keeps
// the regions' stores on one schedule, and region 0 on v1 beside region 1
// on v2 mint the same bits (v1 machine 128 is v2 region 1 machine 0).
// With no registry written, or a store that keeps none (RegistryReader
// nil), it logs that the fleet is taken to be one region and refuses
// nothing. Any other error is a failed read, to retry.
func (k *Keeper) checkRegistry(ctx context.Context) error {
	c := &k.cfg
	cctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
	defer cancel()
	rr := c.Store.RegistryReader()
	var reg registry.Registry
	var err error
	if rr != nil {
		reg, err = rr.Registry(cctx)
	}
	if err != nil {
		return fmt.Errorf("lease: read the region registry from the lease store: %w", err)
	}
	if reg.Version == 0 {
		k.log.Info("the lease store holds no region registry: the fleet is taken to be one region, and the region number is not checked "+
			"(a fleet of more than one region keeps a registry in every region's store: snowfence regions add NAME --create)", "region", c.Region)
		return nil
	}
	g, err := reg.Resolve(strconv.Itoa(c.Region))
	if err != nil {
		return fmt.Errorf("region %d: %w", c.Region, err)
	}
	if g.Home != "" {
		own, err := rr.RegistryIdentity(cctx)
		if err != nil {
			return fmt.Errorf("lease: read the lease store's identity, to check it is region %s's home: %w", g.Name, err)
		}
		if err := registry.CheckHome(reg, g, own); err != nil {
			return fmt.Errorf("region %d: %w", c.Region, err)
		}
	}
	if reg.Schedule != "" || inService(reg) > 1 {
		// With none recorded, CheckHolderSchedule refuses: two regions
		// in service must be kept on one schedule, and only the
		// registry's record does that.
		fleet, err := rr.FleetSchedule(cctx)
		if err != nil {
			return fmt.Errorf("lease: read the fleet schedule record from the lease store: %w", err)
		}
		if err := CheckHolderSchedule(reg, c.Schedule.String(), fleet); err != nil {
			return fmt.Errorf("region %s (number %d): %w", g.Name, g.Number, err)
		}
	}
	k.log.Info("region checked against the region registry", "region", g.Name, "number", g.Number, "home", g.Home,
		"registry_version", reg.Version, "schedule", reg.Schedule)
	return nil
}

// inService counts the registry's regions that are not retired.
func inService(reg registry.Registry) int {
	n := 0
	for _, g := range reg.Regions {
		if !g.Retired() {
			n++
		}
	}
	return n
}

// registryRefused reports whether err, from checkRegistry, is a refusal
// (final) rather than a failed read (retried).
func registryRefused(err error) bool {
	for _, final := range []error{registry.ErrUnknownRegion, registry.ErrRegionRetired, registry.ErrWrongHome, ErrSchedule, ErrInvalid} {
		if errors.Is(err, final) {
			return true
		}
	}
	return false
}
