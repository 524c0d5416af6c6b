package leasetest

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// A Harness tells the suite how to open and age stores of one kind.
type Harness struct {
	// New returns a store on a fresh, empty keyspace (a key prefix, a
	// table, a schema) of its own. Required. The harness closes it when t
	// ends.
	New func(t *testing.T) lease.Store
	// Reopen returns another Store value on the same keyspace as s, as a
	// second process would open it: it shares the data, not the in-memory
	// state. Nil means s itself is used.
	Reopen func(t *testing.T, s lease.Store) lease.Store
	// Expire makes lease l lapse in the store without its holder's help, as
	// a holder that died would let it (etcd: revoke its etcd lease). Nil
	// does nothing, which is right for ClockExpiry stores.
	Expire func(t *testing.T, s lease.Store, l *lease.Lease)
	// ClockExpiry is true for lease tables, where expiry is judged by the
	// claimer's clock against the record's ExpiresMs, which is also its
	// mark. The suite then also checks what is specific to tables: the
	// claim condition "expiry < claimer's now", the epoch as token (+1 per
	// claim, and per quarantine as the operator's quarantine of a row
	// does), the compare on the holder as well as the token, and the
	// quarantine row (holder lease.QuarantineHolder, expiry
	// lease.QuarantineExpiryMs: 2100-01-01).
	ClockExpiry bool
	// LeaseFor is the lease length the suite claims with. Zero means 10 s.
	LeaseFor time.Duration
	// Rollback copies the data of s's store aside — its leases, of every
	// keyspace, with what the store keeps beside them — and returns a
	// function that writes that copy back in place of whatever is there
	// then, as restoring a file-level copy of the server's data does: the
	// same server, the same table, older rows, nothing in the server's
	// identity that says so. The returned function may be called more than
	// once. Nil skips the checks of what a store notices after such a
	// restore (rollback.go), for stores whose own tests play their restores
	// (etcdstore).
	Rollback func(t *testing.T, s lease.Store) (put func())
	// LoseReply returns a store on a fresh keyspace of its own (as New)
	// and lose: after lose, the store's next write (the next extension's)
	// reaches the server and commits, and its reply is lost, as on a
	// network failure. Nil skips the check that needs it.
	LoseReply func(t *testing.T) (st lease.Store, lose func())
}

// A check is one named check of the suite.
type check struct {
	name string
	f    func(*testing.T, *suite)
}

// fenceChecks need only the fence contract, lease.Store: the two rules
// (a new token on every claim, compared on every extension; a mark every
// later holder starts at or above), a cloned holder, a restore the store
// must notice, and real keepers on the store.
var fenceChecks = []check{
	{"ClaimRace", checkClaimRace},
	{"ClaimOnlyWhenFreeOrExpired", checkClaimOnlyWhenFree},
	{"ExtendComparesHolderAndToken", checkExtendCompares},
	{"ExtendOnlyForward", checkExtendOnlyForward},
	{"StaleHolderLost", checkStaleHolderLost},
	{"Release", checkRelease},
	{"MarkSurvivesRelease", checkMarkSurvivesRelease},
	{"Ranges", checkRanges},
	{"SharedHolderRace", checkSharedHolderRace},
	{"ExtendComparesClaim", checkExtendComparesClaim},
	{"KeeperRace", checkKeeperRace},
	{"RollbackEpochFell", checkRollbackEpochFell},
	{"RollbackEpochRepeated", checkRollbackEpochRepeated},
	{"RollbackOwnMarkFell", checkRollbackOwnMarkFell},
	{"RollbackReleaseOwnMarkFell", checkRollbackReleaseOwnMarkFell},
	{"RollbackRenewalValueBack", checkRollbackRenewalValueBack},
	{"RollbackFloorsEveryKeeper", checkRollbackFloorsEveryKeeper},
	{"CloneIsLost", checkCloneIsLost},
	{"CloneReleaseKeepsMark", checkCloneReleaseKeepsMark},
	{"CloneUnknownOutcome", checkCloneUnknownOutcome},
	{"CloneMintsOnce", checkCloneMints},
}

// adminChecks need lease.Admin: the operator's actions (list, quarantine,
// raise marks, the journal, the fleet schedule record), and the checks of
// the fence whose set-up or reading needs one of them (token steps of a
// quarantine, keyspaces listed apart, the fleet schedule compared at
// claims, a cutover, a restore seen in the records).
var adminChecks = []check{
	{"TokensIncrease", checkTokensIncrease},
	{"GetList", checkGetList},
	{"Quarantine", checkQuarantine},
	{"MaxAhead", checkMaxAhead},
	{"RaiseMarks", checkRaiseMarks},
	{"RaiseMarksEveryNumber", checkRaiseMarksEveryNumber},
	{"Schedule", checkSchedule},
	{"RegistryBesideLeases", checkRegistryBesideLeases},
	{"RegistrySchedule", checkRegistrySchedule},
	{"Keyspaces", checkKeyspaces},
	{"Invalid", checkInvalid},
	{"Journal", checkJournal},
	{"JournalRetention", checkJournalRetention},
	{"JournalRace", checkJournalRace},
	{"JournalUnrenewed", checkJournalUnrenewed},
	{"JournalQuarantinedRelease", checkJournalQuarantinedRelease},
	{"Cutover", checkCutover},
	{"RollbackSeenByClaimer", checkRollbackSeenByClaimer},
	{"LossNotRestore", checkLossNotRestore},
	{"CountHolders", checkCountHolders},
}

// Run runs the fence contract's checks against stores from h, each as a
// parallel subtest named after what it checks. A store that implements
// only lease.Store passes them; a store with the operator's actions also
// runs RunAdmin, and registrytest.Run on RegistryHarness(h).
func Run(t *testing.T, h Harness) {
	t.Helper()
	run(t, h, fenceChecks)
}

// RunAdmin runs the checks that need lease.Admin against stores from h,
// whose New must return one (each check fails otherwise).
func RunAdmin(t *testing.T, h Harness) {
	t.Helper()
	run(t, h, adminChecks)
}

func run(t *testing.T, h Harness, checks []check) {
	t.Helper()
	if h.New == nil {
		t.Fatal("leasetest: Harness.New is nil")
	}
	if h.LeaseFor == 0 {
		h.LeaseFor = 10 * time.Second
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, &suite{h: h})
		})
	}
}

// RegistryHarness is the harness of registrytest.Run for the stores of h,
// which must be lease.Admin (and so registry.Store): each keeps its copy
// of the region registry beside its leases, and its sibling on another
// keyspace (lease.Admin.AdminKeyspace) shares that copy.
func RegistryHarness(h Harness) registrytest.Harness {
	asAdmin := func(t *testing.T, st registry.Store) lease.Admin {
		t.Helper()
		a, ok := st.(lease.Admin)
		if !ok {
			t.Fatalf("%T is not a lease.Admin", st)
		}
		return a
	}
	rh := registrytest.Harness{
		New: func(t *testing.T) registry.Store { return mustAdmin(t, h.New(t)) },
		Sibling: func(t *testing.T, st registry.Store) registry.Store {
			a := asAdmin(t, st)
			idx, err := lease.KeyspaceOf(1, regionOf(t, a))
			if err != nil {
				t.Fatalf("KeyspaceOf: %v", err)
			}
			return mustAdminKeyspace(t, a, idx)
		},
	}
	if h.Reopen != nil {
		rh.Reopen = func(t *testing.T, st registry.Store) registry.Store {
			return mustAdmin(t, h.Reopen(t, asAdmin(t, st)))
		}
	}
	return rh
}
