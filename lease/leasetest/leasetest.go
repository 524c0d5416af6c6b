package leasetest

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
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

// Run runs every check of the suite against stores from h, each as a
// parallel subtest named after what it checks.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("leasetest: Harness.New is nil")
	}
	if h.LeaseFor == 0 {
		h.LeaseFor = 10 * time.Second
	}
	for _, c := range []struct {
		name string
		f    func(*testing.T, *suite)
	}{
		{"ClaimRace", checkClaimRace},
		{"ClaimOnlyWhenFreeOrExpired", checkClaimOnlyWhenFree},
		{"TokensIncrease", checkTokensIncrease},
		{"ExtendComparesHolderAndToken", checkExtendCompares},
		{"ExtendOnlyForward", checkExtendOnlyForward},
		{"StaleHolderLost", checkStaleHolderLost},
		{"Release", checkRelease},
		{"MarkSurvivesRelease", checkMarkSurvivesRelease},
		{"GetList", checkGetList},
		{"Quarantine", checkQuarantine},
		{"Ranges", checkRanges},
		{"MaxAhead", checkMaxAhead},
		{"RaiseMarks", checkRaiseMarks},
		{"RaiseMarksEveryNumber", checkRaiseMarksEveryNumber},
		{"SharedHolderRace", checkSharedHolderRace},
		{"ExtendComparesClaim", checkExtendComparesClaim},
		{"Schedule", checkSchedule},
		{"Registry", checkRegistry},
		{"RegistryAdds", checkRegistryAdds},
		{"RegistryCopies", checkRegistryCopies},
		{"RegistryIdentity", checkRegistryIdentity},
		{"RegistryJoin", checkRegistryJoin},
		{"RegistrySchedule", checkRegistrySchedule},
		{"Keyspaces", checkKeyspaces},
		{"Invalid", checkInvalid},
		{"KeeperRace", checkKeeperRace},
		{"Journal", checkJournal},
		{"JournalRetention", checkJournalRetention},
		{"JournalRace", checkJournalRace},
		{"JournalUnrenewed", checkJournalUnrenewed},
		{"JournalQuarantinedRelease", checkJournalQuarantinedRelease},
		{"Cutover", checkCutover},
		{"RollbackEpochFell", checkRollbackEpochFell},
		{"RollbackEpochRepeated", checkRollbackEpochRepeated},
		{"RollbackOwnMarkFell", checkRollbackOwnMarkFell},
		{"RollbackReleaseOwnMarkFell", checkRollbackReleaseOwnMarkFell},
		{"RollbackRenewalValueBack", checkRollbackRenewalValueBack},
		{"RollbackSeenByClaimer", checkRollbackSeenByClaimer},
		{"RollbackFloorsEveryKeeper", checkRollbackFloorsEveryKeeper},
		{"LossNotRestore", checkLossNotRestore},
		{"CloneIsLost", checkCloneIsLost},
		{"CloneReleaseKeepsMark", checkCloneReleaseKeepsMark},
		{"CloneUnknownOutcome", checkCloneUnknownOutcome},
		{"CloneMintsOnce", checkCloneMints},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, &suite{h: h})
		})
	}
}
