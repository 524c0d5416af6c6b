package pgstore_test

import (
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackConnectOptionsIsolation: Connect sets default_transaction_isolation
// as a startup parameter; a URL carrying options=-c default_transaction_isolation=...
// must not win over it (else Connect's claims run REPEATABLE READ, and
// checkIsolation is the only guard).
func TestAttackConnectOptionsIsolation(t *testing.T) {
	pool := testPool(t, 2)
	table := newTable(t, pool)
	openStore(t, pool, table)
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "options=-c%20default_transaction_isolation%3Dserializable"
	// The options reach the server: a plain pool on the URL runs SERIALIZABLE.
	plain, err := pgxpool.New(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	var level string
	if err := plain.QueryRow(t.Context(), "SELECT current_setting('transaction_isolation')").Scan(&level); err != nil || level != "serializable" {
		t.Fatalf("a plain pool on the URL runs %q (%v), want serializable", level, err)
	}
	plain.Close()
	s, err := pgstore.Connect(t.Context(), u.String(), pgstore.Config{Table: table})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	_, err = s.Claim(t.Context(), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute})
	if err != nil {
		t.Fatalf("claim: %v (refused: options= won over Connect's setting, but checkIsolation caught it)", err)
	}
}
