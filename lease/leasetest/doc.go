// Package leasetest is the conformance suite of lease stores: Run checks
// the fence contract (lease.Store), which every store must pass and a
// store with nothing else can; RunAdmin checks the operator's actions
// (lease.Admin); RegistryHarness adapts a Harness to registrytest.Run, the
// suite of the store's copy of the region registry.
// A store's own tests call Run with a Harness that opens stores on a real
// server (etcd, PostgreSQL, DynamoDB Local, …); the suite then checks the
// two rules of package lease — a new fencing token on every claim, compared
// on every extension, and a mark that every later holder starts at or
// above — plus the operator's commands (quarantine, raise-marks) and the
// typed errors.
//
// Every check runs as a named parallel subtest on stores of its own (a key
// prefix, a table), so one server serves the whole suite.
//
// # Two kinds of store
//
// Stores differ in who decides that a lease has expired. In etcd the server
// does (the owner key's etcd lease runs out); its Harness.Expire revokes that
// lease. In a lease table the claimer does: a claim succeeds only if the
// row's lease_expiry is below the claimer's clock (ClaimRequest.NowMs). Such
// stores set Harness.ClockExpiry, leave Expire nil (or use it for nothing),
// and the suite expires a lease by moving the next claimer's clock past the
// record's ExpiresMs. The checks are the same for both; only the way to
// expire a lease differs.
//
// # The region registry
//
// Every store of this module also keeps a copy of the region registry
// beside its leases (lease.Admin embeds registry.Store). The checks of the
// copy itself are package registrytest's (RegistryHarness); registry.go
// here holds the two that need the leases too: writing the registry
// disturbs no lease, and every claim compares the store's fleet schedule
// record with the schedule its copy records.
//
// leasetest.go holds the Harness, Run (fenceChecks), RunAdmin
// (adminChecks) and RegistryHarness; checks.go the store checks;
// journal.go those of the journal; cutover.go that of a schedule's
// cutover; keyspaces.go the check of a store's siblings on other
// keyspaces (lease.Store.Keyspace and lease.Admin.AdminKeyspace, one per
// layout step); keepers.go the checks of real keepers on the store;
// rollback.go the checks of what a store notices after its data was put
// back to an earlier state where the server shows no sign of it
// (Harness.Rollback); clone.go those of a cloned holder process (two
// copies of one lease, each renewing through its own Store value);
// helpers.go what they share (and what a store's own tests may use).
package leasetest
