// Package idtable checks IDs the tests collected against PostgreSQL: a
// table whose PRIMARY KEY is the ID refuses a duplicate, as a user's table
// would (PrimaryKeyDuplicates), and a join finds IDs handed out that no
// server issued (NotIn).
package idtable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PrimaryKeyDuplicates copies ids into a temporary PostgreSQL table whose
// primary key is the ID, and returns how many of them are duplicates: zero
// when the copy succeeds; when it fails on the key (unique_violation), the
// IDs are copied again into a table without a key to count them.
func PrimaryKeyDuplicates[T ~int64](t testing.TB, url string, ids []T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	rows := func(i int) ([]any, error) { return []any{int64(ids[i])}, nil }
	if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE acked_ids (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"acked_ids"}, []string{"id"}, pgx.CopyFromSlice(len(ids), rows))
	var pe *pgconn.PgError
	switch {
	case err == nil && n == int64(len(ids)):
		return 0
	case err == nil:
		t.Fatalf("COPY of %d IDs wrote %d rows", len(ids), n)
	case !errors.As(err, &pe) || pe.Code != "23505":
		t.Fatalf("COPY of %d IDs: %v", len(ids), err)
	}
	t.Logf("COPY into the primary key failed: %v", err)
	if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE acked_ids_all (id bigint NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"acked_ids_all"}, []string{"id"}, pgx.CopyFromSlice(len(ids), rows)); err != nil {
		t.Fatal(err)
	}
	var dups int
	if err := conn.QueryRow(ctx, "SELECT count(*) - count(DISTINCT id) FROM acked_ids_all").Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups == 0 {
		t.Fatalf("COPY failed on the primary key, yet the %d IDs hold no duplicate", len(ids))
	}
	return dups
}

// NotIn counts the IDs of handed that are not among issued, in
// PostgreSQL: the IDs a client handed out that no server issued.
func NotIn[T ~int64](t testing.TB, url string, handed, issued []T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	for _, tb := range []struct {
		name string
		ids  []T
	}{{"handed_ids", handed}, {"issued_ids", issued}} {
		if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE "+tb.name+" (id bigint NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		ids := tb.ids
		rows := func(i int) ([]any, error) { return []any{int64(ids[i])}, nil }
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{tb.name}, []string{"id"}, pgx.CopyFromSlice(len(ids), rows)); err != nil {
			t.Fatalf("COPY %s: %v", tb.name, err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE INDEX ON issued_ids (id)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM handed_ids h WHERE NOT EXISTS (SELECT 1 FROM issued_ids i WHERE i.id = h.id)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
