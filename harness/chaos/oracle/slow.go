package oracle

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// slow writes b when its COPY hit the primary key, in one transaction:
// stage it, read its repeated IDs, insert the new ones. It adds the batch's
// extra copies to w.duplicates and describes them in w.examples.
func (w *writer) slow(ctx context.Context, b *batch) error {
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("slow path: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) // a no-op after Commit

	w.buf = b.appendCopy(w.buf[:0], true)
	tag, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(w.buf), copySQL(w.table, true))
	if err != nil {
		return fmt.Errorf("slow path: COPY into %s: %w", stageTable, err)
	}
	if n := tag.RowsAffected(); n != int64(b.len()) {
		return fmt.Errorf("%w: slow path: COPY into %s wrote %d rows of %d", ErrMismatch, stageTable, n, b.len())
	}

	// Probe the primary key once per distinct ID of the batch, whatever
	// the table's size: a merge or hash join would read the whole table
	// (or the part of it the batch spans) for every slow batch.
	for _, set := range []string{"SET LOCAL enable_mergejoin = off", "SET LOCAL enable_hashjoin = off", "SET LOCAL work_mem = '64MB'"} {
		if _, err := tx.Exec(ctx, set); err != nil {
			return fmt.Errorf("slow path: %s: %w", set, err)
		}
	}
	// Every ID of the batch that repeats in it or is already in the table,
	// in the order of their first copies: the table row's source (NULL when
	// there is no row; source is NOT NULL) and the batch's sources.
	rows, err := tx.Query(ctx, `SELECT s.id, t.source, s.srcs
		FROM (SELECT id, array_agg(source ORDER BY seq) AS srcs, min(seq) AS first
		      FROM `+stageTable+` GROUP BY id) s
		LEFT JOIN `+w.table+` t ON t.id = s.id
		WHERE cardinality(s.srcs) > 1 OR t.id IS NOT NULL
		ORDER BY s.first`)
	if err != nil {
		return fmt.Errorf("slow path: find the repeated IDs: %w", err)
	}
	var (
		extra int64
		reps  []repeat
		r     repeat
	)
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.earlier, &r.srcs}, func() error {
		n := int64(len(r.srcs))
		if r.earlier == nil {
			n-- // the batch's first copy is the original
		}
		extra += n
		reps = append(reps, r)
		r = repeat{}
		return nil
	})
	if err != nil {
		return fmt.Errorf("slow path: read the repeated IDs: %w", err)
	}

	ins, err := tx.Exec(ctx, `INSERT INTO `+w.table+` (id, source)
		SELECT DISTINCT ON (id) id, source FROM `+stageTable+` ORDER BY id, seq
		ON CONFLICT (id) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("slow path: insert into %s: %w", w.table, err)
	}
	if got, want := ins.RowsAffected(), int64(b.len())-extra; got != want {
		return fmt.Errorf("%w: slow path inserted %d rows, want %d (%d IDs − %d extra copies); does something else write %s?",
			ErrMismatch, got, want, b.len(), extra, w.table)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("slow path: commit: %w", err)
	}
	w.duplicates += extra
	for _, r := range reps {
		w.describe(r)
	}
	return nil
}

// repeat is one ID of a batch that repeats in it or is already in the
// table.
type repeat struct {
	id      int64
	earlier *int32  // the source of the row already in the table; nil if none
	srcs    []int32 // the batch's sources of id, in the order received
}

// describe records r among the examples while there is room; an ID already
// described gets the batch's sources appended.
func (w *writer) describe(r repeat) {
	if i, ok := w.exampleAt[r.id]; ok {
		w.examples[i].Sources = append(w.examples[i].Sources, r.srcs...)
		return
	}
	if len(w.examples) >= MaxExamples {
		return
	}
	d := Duplicate{ID: r.id}
	if r.earlier != nil {
		d.Sources = append(d.Sources, *r.earlier)
	}
	d.Sources = append(d.Sources, r.srcs...)
	if w.exampleAt == nil {
		w.exampleAt = make(map[int64]int)
	}
	w.exampleAt[r.id] = len(w.examples)
	w.examples = append(w.examples, d)
}
