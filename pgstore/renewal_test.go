package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// TestRenewalMigratesOldTable: a lease table made by the version before
// renewal values (no renewal column), with a holder on it. Until Migrate
// runs, extensions and claims fail and say to run it; Migrate adds the
// column, empty in every row — what a claim writes — so the holder from
// before renews (its first renewal writes a value) and a copy of its
// lease that renews second is refused as a clone.
func TestRenewalMigratesOldTable(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	now := time.Now().UnixMilli()
	held := leasetest.MustClaim(t, s, journalReq("before", 1, now))
	if _, err := pool.Exec(t.Context(), "ALTER TABLE "+pgx.Identifier{table}.Sanitize()+" DROP COLUMN renewal"); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(pool, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Extend(t.Context(), held, now+15000, 10*time.Second); err == nil || !strings.Contains(err.Error(), "leases init") {
		t.Fatalf("extension on the table before Migrate: %v, want an error saying to run Migrate (snowfence leases init)", err)
	}
	if _, err := st.Claim(t.Context(), journalReq("after", 2, now)); err == nil || !strings.Contains(err.Error(), "leases init") {
		t.Fatalf("claim on the table before Migrate: %v, want an error saying to run Migrate (snowfence leases init)", err)
	}
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, st, 1); rec.Holder != "before" || rec.Renewal != "" {
		t.Fatalf("record of the holder from before Migrate = %+v, want its holder and no renewal value", rec)
	}
	renewed := leasetest.MustExtend(t, st, held, now+16000, 10*time.Second)
	if rec := leasetest.MustGet(t, st, 1); renewed.Renewal == "" || rec.Renewal != renewed.Renewal {
		t.Fatalf("after the first renewal since Migrate: lease %q, record %+v; want the renewal value written", renewed.Renewal, rec)
	}
	clone := openStore(t, pool, table)
	if _, err := clone.Extend(t.Context(), held, now+17000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("a copy of the lease from before that renewal: %v, want ErrLost", err)
	}
	leasetest.MustRelease(t, st, renewed, now+16000)
}

// TestRenewalWrittenBackIsRestored: the row of a held number goes back to
// an earlier renewal of its own holder (a restore of the table, a failover
// that lost the last commits, on the same timeline: nothing else shows
// it). No clone can write a value the holder wrote before, so the next
// extension says lease.ErrRestored — the keeper then waits the restore
// window — and does not extend from the old row.
func TestRenewalWrittenBackIsRestored(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	now := time.Now().UnixMilli()
	l := leasetest.MustExtend(t, s, leasetest.MustClaim(t, s, journalReq("h", 1, now)), now+20_000, 10*time.Second)
	var expiry int64
	var renewal string
	quoted := pgx.Identifier{table}.Sanitize()
	if err := pool.QueryRow(t.Context(), "SELECT lease_expiry, renewal FROM "+quoted+" WHERE machine_id = 1").Scan(&expiry, &renewal); err != nil {
		t.Fatal(err)
	}
	l = leasetest.MustExtend(t, s, l, now+30_000, 10*time.Second)
	if _, err := pool.Exec(t.Context(), "UPDATE "+quoted+" SET lease_expiry = $1, renewal = $2 WHERE machine_id = 1", expiry, renewal); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(t.Context(), l, now+40_000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("extension of a row written back to the holder's earlier renewal: %v, want ErrRestored", err)
	}
	if rec := leasetest.MustGet(t, s, 1); rec.MarkMs != expiry {
		t.Errorf("record after the refused extension = %+v, want the written-back mark %d kept", rec, expiry)
	}
}
