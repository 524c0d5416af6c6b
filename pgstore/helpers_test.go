package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/pgstore"
)

// testURL returns the test server's URL (see testenv.PostgresURL).
func testURL(t testing.TB) string { return testenv.PostgresURL(t) }

// testPool opens a pool on the test server, closed when t ends.
func testPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatalf("%s: %v", testenv.PostgresURLEnv, err)
	}
	cfg.MaxConns = maxConns
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		t.Fatalf("connect to %s: %v (is scripts/services/postgres.sh running?)", testenv.PostgresURLEnv, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newTable returns a fresh table name, dropped when t ends with the tables
// beside it.
func newTable(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "lt_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range []string{name, name + "_fleet", name + "_origin", name + "_region", name + "_claims", name + "_ident"} {
			pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{n}.Sanitize())
		}
	})
	return name
}

// openStore returns a store on table, creating the table, logging to t.
func openStore(t testing.TB, pool *pgxpool.Pool, table string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(pool, pgstore.Config{Table: table, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("pgstore.New: %v", err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// quietStore is openStore without the log, for tests and benchmarks whose
// thousands of claims would bury everything else in it.
func quietStore(t testing.TB, pool *pgxpool.Pool, table string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(pool, pgstore.Config{Table: table})
	if err != nil {
		t.Fatalf("pgstore.New: %v", err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// copySeq numbers the copies copyAside makes.
var copySeq atomic.Int64

// copyAside copies the rows of table, its journal (<table>_claims) and its
// origin row (<table>_origin) aside, as of one moment, and returns a
// function that writes them back in place of the rows there then: a
// restore of a file-level copy of the server's data, as far as the table
// can tell — the same server, system identifier and timeline, older rows.
// The copies are dropped when t ends.
func copyAside(t testing.TB, pool *pgxpool.Pool, table string) (put func()) {
	t.Helper()
	n := copySeq.Add(1)
	var pairs [][2]string
	for _, suffix := range []string{"", "_claims", "_origin"} {
		pairs = append(pairs, [2]string{pgx.Identifier{table + suffix}.Sanitize(), pgx.Identifier{fmt.Sprintf("%s%s_copy%d", table, suffix, n)}.Sanitize()})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, p := range pairs {
			pool.Exec(ctx, "DROP TABLE IF EXISTS "+p[1])
		}
	})
	err := pgx.BeginTxFunc(t.Context(), pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		for _, p := range pairs {
			if _, err := tx.Exec(t.Context(), "CREATE TABLE "+p[1]+" AS SELECT * FROM "+p[0]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copy %s aside: %v", table, err)
	}
	return func() {
		t.Helper()
		err := pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			for _, p := range pairs {
				if _, err := tx.Exec(t.Context(), "DELETE FROM "+p[0]+"; INSERT INTO "+p[0]+" SELECT * FROM "+p[1]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("put the copy of %s back: %v", table, err)
		}
	}
}
