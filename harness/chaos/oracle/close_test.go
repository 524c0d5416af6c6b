package oracle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// waitTimeout bounds waiting for something that should happen at once; it
// only turns a hang into a failure.
const waitTimeout = 30 * time.Second

// TestCloseCancelled closes with a cancelled context: an error wrapping
// context.Canceled, the writer gone, and the oracle closed for good.
func TestCloseCancelled(t *testing.T) {
	o := openOracle(t, Config{Batch: 10})
	if err := o.Add(seq(0, 1, 1, 25)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := o.Close(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled) = %v, want an error wrapping context.Canceled", err)
	}
	if res.Received != 25 {
		t.Errorf("Received = %d, want 25", res.Received)
	}
	select {
	case <-o.done:
	default:
		t.Error("the writer still runs after Close returned")
	}
	if err := o.Add(seq(0, 100, 1, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if _, err := o.Close(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

// TestWriteErrorIsFatal drops the table under the oracle: the next COPY
// fails, an Add that needs the writer returns the *WriteError, and so does
// Close.
func TestWriteErrorIsFatal(t *testing.T) {
	o := openOracle(t, Config{Batch: 10, MaxQueued: 20})
	if _, err := testConn(t).Exec(t.Context(), "DROP TABLE "+o.cfg.Table); err != nil {
		t.Fatalf("drop the table: %v", err)
	}
	// 21 IDs fit only once the writer finished a batch, and its first
	// batch fails.
	err := o.Add(seq(0, 1, 1, 21))
	var we *WriteError
	if !errors.As(err, &we) {
		t.Fatalf("Add = %v, want a *WriteError", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Errorf("WriteError's cause = %v, want undefined_table (42P01)", we.Err)
	}
	if we.Batch != 1 || we.IDs != 10 {
		t.Errorf("WriteError names batch %d of %d IDs, want batch 1 of 10", we.Batch, we.IDs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := o.Close(ctx); !errors.Is(err, we) {
		t.Errorf("Close = %v, want the writer's error %v", err, we)
	}
}
