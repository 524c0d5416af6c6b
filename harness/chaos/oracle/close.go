package oracle

import (
	"context"
	"fmt"
	"time"
)

// closeTimeout bounds closing the connection after Close gave up.
const closeTimeout = 5 * time.Second

// Close writes what is still queued, waits for the writer, counts the
// table's rows and (unless Config.Keep) drops the table. The Result is
// filled as far as known even when Close fails. If ctx ends first, Close
// stops the writer, closes the connection and returns an error wrapping
// ctx.Err(); so does a cancelled ctx at the call. The writer's *WriteError,
// a table that disagrees with the counts (ErrMismatch) and failed queries
// are errors too. A second Close returns ErrClosed.
func (o *Oracle) Close(ctx context.Context) (Result, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return Result{}, ErrClosed
	}
	o.closed = true
	if o.pending != nil {
		o.queue = append(o.queue, o.pending)
		o.pending = nil
	}
	o.cond.Broadcast()
	o.mu.Unlock()

	if ctx.Err() == nil {
		select {
		case <-o.done:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		o.abort()
		return o.result(), fmt.Errorf("oracle: close: the writer was stopped, the table may miss IDs: %w", ctx.Err())
	}

	res := o.result()
	if o.err != nil {
		o.w.close()
		return res, o.err
	}
	err := o.w.conn.QueryRow(ctx, "SELECT count(*) FROM "+o.cfg.Table).Scan(&res.Rows)
	if err != nil {
		o.w.close()
		return res, fmt.Errorf("oracle: close: count the rows of %s: %w", o.cfg.Table, err)
	}
	if want := res.Received - res.Duplicates; res.Rows != want {
		o.w.close()
		return res, fmt.Errorf("%w: %s has %d rows, want %d (%d received − %d duplicates)",
			ErrMismatch, o.cfg.Table, res.Rows, want, res.Received, res.Duplicates)
	}
	if !o.cfg.Keep {
		if _, err := o.w.conn.Exec(ctx, "DROP TABLE "+o.cfg.Table); err != nil {
			o.w.close()
			return res, fmt.Errorf("oracle: close: drop %s: %w", o.cfg.Table, err)
		}
	}
	if err := o.w.conn.Close(ctx); err != nil {
		return res, fmt.Errorf("oracle: close the connection: %w", err)
	}
	return res, nil
}

// abort stops the writer at once, waits for it and closes the connection.
func (o *Oracle) abort() {
	o.mu.Lock()
	o.aborted = true
	o.cond.Broadcast()
	o.mu.Unlock()
	o.cancel()
	<-o.done
	o.w.close()
}

// result collects the counts. The writer's fields are read only once it
// returned; o.done closing orders those reads after its writes.
func (o *Oracle) result() Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	res := Result{
		Received: o.received,
	}
	select {
	case <-o.done:
		res.Duplicates = o.w.duplicates
		res.Examples = o.w.examples
		res.SlowBatches = o.w.slowBatches
	default:
	}
	return res
}
