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
