package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// indexResult is one index of a table after its load.
type indexResult struct {
	Name   string `json:"name"`
	Column string `json:"column"`
	// Key is true for the index lookups go through.
	Key   bool  `json:"key"`
	Bytes int64 `json:"bytes"`
	// LeafDensity is pgstatindex's avg_leaf_density, in percent.
	LeafDensity float64 `json:"avg_leaf_density"`
	LeafPages   int64   `json:"leaf_pages"`
	TreeLevel   int64   `json:"tree_level"`
}

// result is one table's measurements.
type result struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	How   string `json:"how"`
	Rows  int64  `json:"rows"`
	// LoadSeconds is the whole load, from the first batch's key
	// generation to the last COPY's commit; GenSeconds is the part of it
	// spent making keys and rows in the client, CopySeconds the rest (the
	// COPY calls, from sending a batch to its commit).
	LoadSeconds float64 `json:"load_seconds"`
	GenSeconds  float64 `json:"gen_seconds"`
	CopySeconds float64 `json:"copy_seconds"`
	// InsertRate is Rows over CopySeconds: the database's rate, without
	// the client's key making.
	InsertRate float64 `json:"insert_rows_per_second"`
	// TableBytes is the heap's main fork.
	TableBytes int64         `json:"table_bytes"`
	Indexes    []indexResult `json:"indexes"`
	// WALBytes is pg_wal_lsn_diff of pg_current_wal_lsn() after and
	// before the load; WALRecords and WALFPI are pg_stat_wal's
	// wal_records and wal_fpi (full-page images) over the same span.
	WALBytes   int64 `json:"wal_bytes"`
	WALRecords int64 `json:"wal_records"`
	WALFPI     int64 `json:"wal_fpi"`
	// Lookups point lookups of sampled rows took LookupSeconds.
	Lookups       int     `json:"lookups"`
	LookupSeconds float64 `json:"lookup_seconds"`
	LookupRate    float64 `json:"lookups_per_second"`
}

// keyIndex returns the index lookups go through.
func (r result) keyIndex() indexResult {
	for _, ix := range r.Indexes {
		if ix.Key {
			return ix
		}
	}
	return indexResult{}
}

// indexBytes returns the size of all the table's indexes.
func (r result) indexBytes() int64 {
	var n int64
	for _, ix := range r.Indexes {
		n += ix.Bytes
	}
	return n
}

// runConfig is what every table's measurement shares.
type runConfig struct {
	rows, batch int64
	lookups     int // 0 skips the lookups
	seed        uint64
	keep        bool
	progress    io.Writer
}

// sampled is a row kept for the lookups: its row number (the payload n) and
// the value a lookup binds.
type sampled struct {
	row int64
	key any
}

// measure creates k's table, loads it and measures it.
func measure(ctx context.Context, conn *pgx.Conn, k kind, rc runConfig) (result, error) {
	res := result{Kind: k.name, Label: k.label, How: k.how, Rows: rc.rows}
	tbl := pgx.Identifier{k.table()}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+tbl); err != nil {
		return res, err
	}
	ddl := fmt.Sprintf("CREATE TABLE %s (%s, n bigint NOT NULL, note text NOT NULL)", tbl, k.keyDDL)
	if _, err := conn.Exec(ctx, ddl); err != nil {
		return res, fmt.Errorf("%s: %w", ddl, err)
	}
	src, err := k.newSource()
	if err != nil {
		return res, err
	}
	cols := []string{"n", "note"}
	if k.copyKey {
		cols = append([]string{k.keyCol}, cols...)
	}

	// The load starts from a clean checkpoint: every page's first change
	// after it is a full-page image, the same for every table.
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return res, err
	}
	lsn0, wal0, err := walPosition(ctx, conn)
	if err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(rc.seed, uint64(len(k.name))))
	want := min(int64(rc.lookups), rc.rows)
	sample := make([]sampled, 0, want)
	rows := make([][]any, 0, rc.batch)
	start := time.Now()
	lastReport := start
	for done := int64(0); done < rc.rows; {
		n := min(rc.batch, rc.rows-done)
		genStart := time.Now()
		rows = rows[:0]
		for i := range n {
			row := done + i
			value, lookup, err := src.next(ctx, row)
			if err != nil {
				return res, fmt.Errorf("%s: key of row %d: %w", k.name, row, err)
			}
			// Reservoir sampling (algorithm R): every row is in the
			// sample with the same probability.
			if int64(len(sample)) < want {
				sample = append(sample, sampled{row, lookup})
			} else if j := rng.Int64N(row + 1); j < want {
				sample[j] = sampled{row, lookup}
			}
			r := []any{row, fmt.Sprintf("r%011d", row)}
			if k.copyKey {
				r = append([]any{value}, r...)
			}
			rows = append(rows, r)
		}
		res.GenSeconds += time.Since(genStart).Seconds()
		copied, err := conn.CopyFrom(ctx, pgx.Identifier{k.table()}, cols, pgx.CopyFromRows(rows))
		if err != nil {
			return res, fmt.Errorf("%s: COPY of rows %d to %d: %w", k.name, done, done+n-1, err)
		}
		if copied != n {
			return res, fmt.Errorf("%s: COPY took %d rows of %d", k.name, copied, n)
		}
		done += n
		if now := time.Now(); now.Sub(lastReport) >= 10*time.Second || done == rc.rows {
			lastReport = now
			el := now.Sub(start).Seconds()
			fmt.Fprintf(rc.progress, "  %-16s load %10d / %d rows  %6.0f s  %8.0f rows/s in COPY\n", k.name, done, rc.rows, el, float64(done)/(el-res.GenSeconds))
		}
	}
	res.LoadSeconds = time.Since(start).Seconds()
	res.CopySeconds = res.LoadSeconds - res.GenSeconds
	res.InsertRate = float64(rc.rows) / res.CopySeconds
	lsn1, wal1, err := walPosition(ctx, conn)
	if err != nil {
		return res, err
	}
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1, $2)::bigint", lsn1, lsn0).Scan(&res.WALBytes); err != nil {
		return res, err
	}
	res.WALRecords = wal1.records - wal0.records
	res.WALFPI = wal1.fpi - wal0.fpi

	var count int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&count); err != nil {
		return res, err
	}
	if count != rc.rows {
		return res, fmt.Errorf("%s: %d rows in the table, %d loaded", k.name, count, rc.rows)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_relation_size($1::regclass)", k.table()).Scan(&res.TableBytes); err != nil {
		return res, err
	}
	if res.Indexes, err = indexes(ctx, conn, k); err != nil {
		return res, err
	}

	if len(sample) > 0 {
		if err := lookups(ctx, conn, k, rng, sample, &res, rc.progress); err != nil {
			return res, err
		}
	}
	if !rc.keep {
		if _, err := conn.Exec(ctx, "DROP TABLE "+tbl); err != nil {
			return res, err
		}
	}
	return res, nil
}

type walStats struct{ records, fpi int64 }

// walPosition returns the current WAL insert position and pg_stat_wal's
// counters, flushed first so this session's own WAL is in them.
func walPosition(ctx context.Context, conn *pgx.Conn) (string, walStats, error) {
	var lsn string
	var w walStats
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		return "", w, err
	}
	err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text, wal_records, wal_fpi FROM pg_stat_wal").Scan(&lsn, &w.records, &w.fpi)
	return lsn, w, err
}

// indexes measures every index of k's table.
func indexes(ctx context.Context, conn *pgx.Conn, k kind) ([]indexResult, error) {
	rs, err := conn.Query(ctx, `
		SELECT c.relname, a.attname, pg_relation_size(c.oid)
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = $1::regclass
		ORDER BY i.indisprimary DESC, c.relname`, k.table())
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (indexResult, error) {
		var ix indexResult
		err := r.Scan(&ix.Name, &ix.Column, &ix.Bytes)
		ix.Key = ix.Column == k.keyCol
		return ix, err
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		err := conn.QueryRow(ctx, "SELECT avg_leaf_density, leaf_pages, tree_level FROM pgstatindex($1)", out[i].Name).
			Scan(&out[i].LeafDensity, &out[i].LeafPages, &out[i].TreeLevel)
		if err != nil {
			return nil, fmt.Errorf("pgstatindex(%s): %w", out[i].Name, err)
		}
	}
	return out, nil
}

// lookups loads the table and its indexes into shared_buffers (pg_prewarm)
// and times point lookups of the sampled rows, in shuffled order, one at a
// time through a prepared statement; each must find its own row.
func lookups(ctx context.Context, conn *pgx.Conn, k kind, rng *rand.Rand, sample []sampled, res *result, progress io.Writer) error {
	if _, err := conn.Exec(ctx, "SELECT pg_prewarm($1)", k.table()); err != nil {
		return err
	}
	for _, ix := range res.Indexes {
		if _, err := conn.Exec(ctx, "SELECT pg_prewarm($1)", ix.Name); err != nil {
			return err
		}
	}
	q := fmt.Sprintf("SELECT n FROM %s WHERE %s = $1", pgx.Identifier{k.table()}.Sanitize(), pgx.Identifier{k.keyCol}.Sanitize())
	stmt, err := conn.Prepare(ctx, "lookup_"+k.name, q)
	if err != nil {
		return err
	}
	rng.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	start := time.Now()
	for _, s := range sample {
		var n int64
		if err := conn.QueryRow(ctx, stmt.Name, s.key).Scan(&n); err != nil {
			return fmt.Errorf("%s: lookup of row %d: %w", k.name, s.row, err)
		}
		if n != s.row {
			return fmt.Errorf("%s: lookup of row %d found row %d", k.name, s.row, n)
		}
	}
	res.Lookups = len(sample)
	res.LookupSeconds = time.Since(start).Seconds()
	res.LookupRate = float64(len(sample)) / res.LookupSeconds
	fmt.Fprintf(progress, "  %-16s %d lookups  %.1f s  %.0f lookups/s\n", k.name, len(sample), res.LookupSeconds, res.LookupRate)
	return conn.Deallocate(ctx, stmt.Name)
}
