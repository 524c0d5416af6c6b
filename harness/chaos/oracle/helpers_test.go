package oracle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// testURL returns the test server's URL (see testenv.PostgresURL).
func testURL(t testing.TB) string { return testenv.PostgresURL(t) }

// testConn opens a connection of the test's own, closed when t ends.
func testConn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatalf("connect to %s: %v (is scripts/services/postgres.sh running?)", testenv.PostgresURLEnv, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// newTable returns a fresh table name, dropped when t ends whatever the
// oracle left behind.
func newTable(t testing.TB) string {
	t.Helper()
	conn := testConn(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "oracle_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return name
}

// openOracle opens an oracle on cfg with a fresh table (cfg.URL and
// cfg.Table are filled in).
func openOracle(t testing.TB, cfg Config) *Oracle {
	t.Helper()
	cfg.URL = testURL(t)
	cfg.Table = newTable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return o
}

// closeOracle closes o, failing t on an error.
func closeOracle(t testing.TB, o *Oracle) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := o.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return res
}

// tableExists reports whether table exists.
func tableExists(t testing.TB, conn *pgx.Conn, table string) bool {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil {
		t.Fatalf("look for table %s: %v", table, err)
	}
	return ok
}

// seq returns n IDs of source src: start, start+step, ….
func seq(src int32, start, step int64, n int) []Issued {
	ids := make([]Issued, n)
	for i := range ids {
		ids[i] = Issued{ID: start + int64(i)*step, Source: src}
	}
	return ids
}

// justIDs returns the IDs of ids.
func justIDs(ids []Issued) []int64 {
	out := make([]int64, len(ids))
	for i, x := range ids {
		out[i] = x.ID
	}
	return out
}
