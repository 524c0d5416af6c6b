package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// uniqueViolation is PostgreSQL's SQLSTATE for a primary-key conflict.
const uniqueViolation = "23505"

// stageTable is the session-local staging table of the slow path.
const stageTable = "oracle_stage"

// writer owns the connection and what only the writer goroutine touches.
type writer struct {
	conn  *pgx.Conn
	table string
	buf   []byte // COPY data, reused

	duplicates  int64
	slowBatches int64
	examples    []Duplicate
	exampleAt   map[int64]int // ID → index in examples
}

// create drops and re-creates the table and creates the staging table.
func (w *writer) create(ctx context.Context) error {
	stmts := []string{
		"DROP TABLE IF EXISTS " + w.table,
		"CREATE UNLOGGED TABLE " + w.table + " (id BIGINT PRIMARY KEY, source INT NOT NULL)",
		"CREATE TEMP TABLE " + stageTable + " (seq INT NOT NULL, id BIGINT NOT NULL, source INT NOT NULL) ON COMMIT DELETE ROWS",
	}
	for _, s := range stmts {
		if _, err := w.conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("oracle: create the table: %s: %w", s, err)
		}
	}
	return nil
}

// close closes the connection after a failure, bounded by closeTimeout.
func (w *writer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	w.conn.Close(ctx)
}

// run writes queued batches until Close has been called and the queue is
// empty, Close gave up, or a batch fails.
func (o *Oracle) run(ctx context.Context) {
	for {
		o.mu.Lock()
		for len(o.queue) == 0 && !o.closed && !o.aborted {
			o.cond.Wait()
		}
		if o.aborted || len(o.queue) == 0 {
			o.mu.Unlock()
			return
		}
		b := o.queue[0]
		o.queue[0] = nil
		o.queue = o.queue[1:]
		o.mu.Unlock()

		err := o.w.write(ctx, b)

		o.mu.Lock()
		o.backlog -= b.len()
		o.free = append(o.free, b)
		if err != nil {
			o.err = &WriteError{Batch: b.seq, IDs: b.len(), Err: err}
			for _, q := range o.queue {
				o.backlog -= q.len()
			}
			o.queue = nil
		}
		o.cond.Broadcast()
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// write puts b into the table: one COPY, or the slow path when the COPY
// hits the primary key.
func (w *writer) write(ctx context.Context, b *batch) error {
	w.buf = b.appendCopy(w.buf[:0], false)
	tag, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(w.buf), copySQL(w.table, false))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
		w.slowBatches++
		return w.slow(ctx, b)
	}
	if err != nil {
		return fmt.Errorf("COPY into %s: %w", w.table, err)
	}
	if n := tag.RowsAffected(); n != int64(b.len()) {
		return fmt.Errorf("%w: COPY into %s wrote %d rows of %d", ErrMismatch, w.table, n, b.len())
	}
	return nil
}
