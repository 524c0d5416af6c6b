package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// TestEpochRepeatedAfterRestore: the sequence the randomized search found.
// Two keepers share one holder string; K1 holds machine 3. The table is
// restored (rows written back from an earlier copy, which no server
// identity shows) and the operator runs RaiseMarks at once, as the runbook
// says; K2, in a process started after the restore, then claims machine 3
// and gets K1's epoch again, since the restored row counts up from an
// older epoch. Holder and epoch alone would let K1 extend K2's claim, and
// both would mint on machine 3; the claim's own nonce tells them apart (a
// store that never saw K1's claim: ErrLost), and K1's own store, which saw
// K1's epoch under K1's claim, takes the same epoch under another claim
// for what it is, a restore (ErrRestored).
func TestEpochRepeatedAfterRestore(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	const holder = "process-p0"
	now := time.Now().UnixMilli()
	claim := func(s *pgstore.Store, at int64) *lease.Lease {
		t.Helper()
		r := lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 3, Hi: 3}, NowMs: at, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
		return leasetest.MustClaim(t, s, r)
	}
	k0 := claim(s, now)
	leasetest.MustRelease(t, s, k0, now+10)
	ctx := t.Context()
	tbl, backup := pgx.Identifier{table}.Sanitize(), pgx.Identifier{table + "_ident"}.Sanitize() // newTable drops it
	if _, err := pool.Exec(ctx, "CREATE TABLE "+backup+" AS SELECT * FROM "+tbl); err != nil {
		t.Fatal(err)
	}
	k1 := leasetest.MustExtend(t, s, claim(s, now+20), now+5000, 10*time.Second)

	// The restore: the table's rows as the backup has them.
	if _, err := pool.Exec(ctx, "DELETE FROM "+tbl); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO "+tbl+" SELECT * FROM "+backup); err != nil {
		t.Fatal(err)
	}
	post := openStore(t, pool, table) // the operator and K2, after the restore
	if _, err := post.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 7}, now+6000); err != nil {
		t.Fatal(err)
	}
	k2 := claim(post, now+30)
	if k2.Token != k1.Token {
		t.Fatalf("K2's epoch %d, K1's %d: the restore did not repeat the epoch, so this test shows nothing", k2.Token, k1.Token)
	}
	fresh := openStore(t, pool, table)
	if _, err := fresh.Extend(ctx, k1, now+7000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("K1, holder %q epoch %d, extends on K2's claim with the same holder and epoch: %v; want ErrLost", holder, k1.Token, err)
	}
	if err := fresh.Release(ctx, k1, now+7000); !errors.Is(err, lease.ErrLost) {
		t.Errorf("K1 releases K2's claim: %v, want ErrLost", err)
	}
	if _, err := s.Extend(ctx, k1, now+7000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("K1 through its own store, which saw its epoch under its own claim: %v, want ErrRestored", err)
	}
	leasetest.MustExtend(t, post, k2, now+8000, 10*time.Second)
}
