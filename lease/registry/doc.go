// Package registry is the region registry: the names of a fleet's
// regions, which region number belongs to which name, since when, whether
// it is retired, which copy of the registry is each region's home, and the
// fleet's layout schedule. A region number is never reused: a retired
// region keeps its number for ever, and a new region takes the lowest
// number no region ever had, so an ID's region number names one region
// across the whole life of the ID space.
//
// Every region keeps a copy of the registry in its own lease store
// (Store), so a holder reads it from the store it leases from and never
// calls another region. An operator's change writes every copy (Update),
// each with a version compare, and is refused when the copies differ.
//
// The package knows nothing of leases: package lease imports it. The
// rules a holder must pass before it claims (its region registered and in
// service, its store the region's home, its schedule the registry's) are
// checked by the keeper (lease/keeperregistry.go) through the lease
// store's RegistryReader; the fleet schedule's changes, which write both
// the registry and every store's fleet schedule record, are
// lease.ChangeFleetSchedule, lease.AddRegionHome and lease.JoinRegistry
// (lease/fleetregistry.go).
//
// Files: registry.go the Registry, its Regions, the Store a copy lives in,
// and the changes over every copy (Update, AddRegion, RetireRegion, Sync);
// read.go Read (every copy read and compared, nothing written); body.go
// the stored form (Encode, Decode, Check); home.go a region's home copy
// (CheckHome); identity.go the copies' identities; join.go a copy joining
// (Join); schedule.go the schedule the registry records (WithSchedule);
// shared.go what package lease shares with it (ErrInvalid, FormatMs,
// CanonicalSchedule). Package registrytest is the conformance suite every
// Store passes, and a Store in memory for tests.
package registry
