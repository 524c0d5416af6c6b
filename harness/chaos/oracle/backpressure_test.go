package oracle

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// stall locks o's table against writes from another connection, so the
// writer's COPY waits; it returns the transaction that holds the lock.
func stall(t *testing.T, o *Oracle) pgx.Tx {
	t.Helper()
	tx, err := testConn(t).Begin(t.Context())
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(t.Context(), "LOCK TABLE "+o.cfg.Table+" IN SHARE MODE"); err != nil {
		t.Fatalf("lock the table: %v", err)
	}
	return tx
}

// blocking installs a hook on o that reports each Add about to wait for
// the writer; call it before any Add.
func blocking(o *Oracle) <-chan struct{} {
	ch := make(chan struct{}, 1)
	o.onBlock = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ch
}

// adder adds n IDs one at a time in a goroutine, counting those accepted;
// done receives Add's first error (nil when all were accepted).
func adder(o *Oracle, n int) (accepted *atomic.Int64, done <-chan error) {
	accepted = new(atomic.Int64)
	ch := make(chan error, 1)
	go func() {
		for i := range n {
			if err := o.Add([]Issued{{ID: int64(i), Source: 0}}); err != nil {
				ch <- err
				return
			}
			accepted.Add(1)
		}
		ch <- nil
	}()
	return accepted, ch
}

// waitBlocked waits until an Add blocks on the writer.
func waitBlocked(t *testing.T, blocked <-chan struct{}) {
	t.Helper()
	select {
	case <-blocked:
	case <-time.After(waitTimeout):
		t.Fatalf("Add did not block within %v although the writer is stalled", waitTimeout)
	}
}

// TestBackpressure stalls the writer: Add blocks once exactly MaxQueued IDs
// wait, and goes on when the writer does, losing nothing.
func TestBackpressure(t *testing.T) {
	const batch, maxQueued, total = 100, 1000, 3000
	o := openOracle(t, Config{Batch: batch, MaxQueued: maxQueued})
	blocked := blocking(o)
	lock := stall(t, o)
	accepted, done := adder(o, total)

	waitBlocked(t, blocked)
	// The adder is inside the Add of ID maxQueued+1, so the count is still.
	if got := accepted.Load(); got != maxQueued {
		t.Errorf("Add blocked after accepting %d IDs, want %d (MaxQueued)", got, maxQueued)
	}
	if got := o.Backlog(); got != maxQueued {
		t.Errorf("Backlog = %d while blocked, want %d", got, maxQueued)
	}

	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatalf("unlock the table: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Add: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Add still blocked %v after the writer went on", waitTimeout)
	}
	res := closeOracle(t, o)
	if res.Received != total || res.Rows != total || res.Duplicates != 0 {
		t.Errorf("Close = %+v, want %d received and rows, no duplicates", res, total)
	}
}

// TestCloseStopsStalledWriter closes while the writer's COPY waits on a
// lock and an Add waits on the writer: Close gives up on its context, the
// Add returns ErrClosed, and nothing hangs.
func TestCloseStopsStalledWriter(t *testing.T) {
	o := openOracle(t, Config{Batch: 10, MaxQueued: 20})
	blocked := blocking(o)
	lock := stall(t, o)
	defer lock.Rollback(context.Background())
	_, done := adder(o, 100)
	waitBlocked(t, blocked)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want an error wrapping context.Canceled", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("blocked Add = %v, want ErrClosed", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Add still blocked %v after Close", waitTimeout)
	}
}
