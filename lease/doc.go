// Package lease hands out machine numbers so that no two live holders share
// one, and fences each holder in time so that no two holders of a number,
// live or dead, ever issue the same timestamp.
//
// A Store keeps, per machine number, an owner (holder and fencing token) and a
// high-water mark: the wall time up to which the current holder may issue.
// Store is the fence contract, all a Keeper calls (ten methods); Admin adds
// the operator's actions (listing, quarantine, raising marks, the journal,
// the fleet schedule record, the store's copy of the region registry).
// Backends live in their own packages (etcdstore, pgstore, dynamostore);
// each implements both and passes leasetest.Run (the fence contract),
// leasetest.RunAdmin (Admin) and registrytest.Run (its registry copy). A
// store of one's own needs only Store, and leasetest.Run, to be held
// through a Keeper. A Keeper claims a number from a Store,
// keeps its mark ahead of the clock, and is the snowfence.LeaseView a
// generator checks on every ID.
//
// # The two rules
//
// A lease alone never guarantees a single holder: leases outlive their TTL
// across leader changes, acknowledgements arrive for revoked leases, writes
// that timed out may have committed, and processes pause between a check and
// its effect. Uniqueness rests on two things only:
//
//  1. The fencing token. Every claim gets a new one, and every extension of
//     the mark compares on it; a failed compare fences the holder at once.
//  2. The mark is a reservation written before use. A holder extends it, with
//     the compare, before it issues any timestamp up to it; a new holder reads
//     it inside its claim and issues only timestamps at or above it.
//
// Timers and lost leases then cost availability, never uniqueness.
//
// # Where things are
//
//   - lease.go: the Store interface (the fence contract), Admin (the
//     operator's actions), RegistryReader (what StartKeeper reads of the
//     region registry), Lease, Record, ClaimRequest, Range and the errors;
//     claimrequest.go and limits.go: the one validation of a claim, of a
//     range and of a machine number that every store calls; ranges.go:
//     the machine ranges per layout (ParseRanges); keyspace.go: the
//     keyspace of each layout step and region (KeyspaceOf).
//   - keeper.go: the Keeper, its configuration (KeeperConfig, checked at
//     StartKeeper), its loop (which hold to claim, renew or retire when)
//     and the generator's view of it (GrantAt, MarkReached, Bind); hold.go:
//     one layout step's number, where the store calls are: the claim, the
//     renewals ahead of the clock, the re-read of an extension of unknown
//     outcome, the self-fence and boot-clock checks, the loss and the
//     release; claimloop.go: what the loop does after a claim without a
//     number (a spare's backoff while every number is held; a first claim
//     refused for good stops the keeper) and Claimed, which waits for one —
//     the one place a keeper claims, from the start (StartKeeper returns
//     before any claim); status.go: what the keeper reports.
//   - fence_notice.go: the wait before a claim's first grant (the store's
//     MaxNoticeWindow), for any holder still issuing on the number;
//     highwater.go, highwaterfile.go: the high-water mark kept outside the
//     store (KeeperConfig.HighWater) and its file.
//   - timings.go: Timings, the keeper timings each store exports; clock.go:
//     the keeper's clock when none is given, which its generator takes
//     (snowfence.New refuses another), and when it watches the boot clock;
//     boottime_*.go: the clock that keeps counting while the host sleeps.
//   - schedule.go: the fleet schedule a store keeps, and the checks that
//     keep holders of two schedules apart.
//   - The region registry is package lease/registry (names, numbers,
//     homes, the fleet's schedule, and the operator's changes over every
//     copy). keeperregistry.go: its rules, which StartKeeper checks for
//     every holder before its first claim through Store.RegistryReader (a
//     region known and in service, its home store, the registry's
//     schedule); fleetregistry.go: what joins the registry with each
//     store's fleet schedule record — the compare every store makes in
//     each claim (CheckRecordedSchedule), a holder's at start
//     (CheckHolderSchedule), and the changes that write both
//     (ChangeFleetSchedule, AddRegionHome, JoinRegistry).
//   - journal.go: the journal of who held each number when (Admin's
//     History) and the intervals derived from it (Intervals, Who);
//     raise.go: RaiseAllMarks, the runbook's step after a restore.
//   - holder.go, nonce.go: holder names and claim nonces, which tell two
//     claims apart when holder strings repeat; renewal.go: the renewal
//     values that tell two copies of one holder process apart.
//   - quarantine.go, format.go: the operator's quarantine values and the
//     one time format of logs and errors.
//   - fence_*.go: the load-bearing lines, each place a snowfence_revert_*
//     build tag undoes (internal/revert), listed in the section below;
//     change them only with scripts/prove-search showing each is still
//     caught.
//   - Package lease/leasetest is the conformance suite every store runs:
//     Run (the fence contract), RunAdmin (the operator's actions), with the
//     registry's checks in lease/registry/registrytest.
//
// # Load-bearing for uniqueness: the fence files
//
// The lines that keep two holders' IDs apart beyond the two rules are in
// files named fence_<rule>.go, each a few small named functions holding
// the build-tag switch (internal/revert) that undoes the rule for its
// proof. Change them only with scripts/prove-search <rule> (and the
// rule's test): fence_notice.go, fence_jump.go, fence_window.go,
// fence_cutover.go, fence_highwater.go, fence_nonce.go, fence_clone.go,
// fence_tablerestore.go, fence_registry.go, fence_bind.go here; the
// generator's fence_jump.go and fence_region.go in package snowfence; each
// store's fence_*.go (etcdstore, pgstore, dynamostore); and
// internal/tablewatch's fence_tablerestore.go. internal/revert's doc lists
// them per rule, and its test fails on a switch outside them.
//
// The design behind the two rules, and the failure stories they answer, is
// in docs/design.md.
package lease
