package oracle

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Oracle receives acknowledged IDs and writes them into its table. Open
// makes one; Close ends it.
type Oracle struct {
	cfg    Config
	w      *writer
	cancel context.CancelFunc // stops the writer's statements
	done   chan struct{}      // closed when the writer returns

	mu       sync.Mutex
	cond     *sync.Cond // signals queue, backlog, closed, err and aborted changes
	pending  *batch     // the batch Add is filling; nil when none
	queue    []*batch   // full batches for the writer, oldest first
	free     []*batch   // written batches, for reuse
	nbatch   int64      // batches created, for their numbers
	backlog  int        // IDs accepted and not yet written
	received int64
	closed   bool  // Close was called
	aborted  bool  // Close gave up: the writer is to stop at once
	err      error // the writer's fatal error

	// onBlock, when set, runs (under mu) each time an Add is about to
	// wait for the writer; tests use it to see backpressure.
	onBlock func()
}

// Open connects to cfg.URL, drops and re-creates the table, and starts the
// writer. ctx bounds only the connecting and the DDL; the writer runs until
// Close.
func Open(ctx context.Context, cfg Config) (*Oracle, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("oracle: connect: %w", err)
	}
	w := &writer{conn: conn, table: cfg.Table}
	if err := w.create(ctx); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	o := &Oracle{cfg: cfg, w: w, cancel: cancel, done: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	go func() {
		defer close(o.done)
		o.run(wctx)
	}()
	return o, nil
}

// Add accepts ids (copying them) for the table. It blocks while
// Config.MaxQueued IDs wait to be written. It returns ErrClosed after Close
// and the writer's *WriteError after a fatal failure; an Add that races
// Close or a failure may have accepted a prefix of ids (Result.Received
// counts exactly what was accepted).
func (o *Oracle) Add(ids []Issued) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.stopped(); err != nil {
		return err
	}
	for len(ids) > 0 {
		for o.backlog >= o.cfg.MaxQueued && o.stopped() == nil {
			if o.onBlock != nil {
				o.onBlock()
			}
			o.cond.Wait()
		}
		if err := o.stopped(); err != nil {
			return err
		}
		if o.pending == nil {
			o.pending = o.newBatch()
		}
		n := min(len(ids), o.cfg.MaxQueued-o.backlog, o.cfg.Batch-o.pending.len())
		o.pending.add(ids[:n])
		o.backlog += n
		o.received += int64(n)
		ids = ids[n:]
		if o.pending.len() == o.cfg.Batch {
			o.queue = append(o.queue, o.pending)
			o.pending = nil
			o.cond.Broadcast()
		}
	}
	return nil
}

// Backlog returns how many IDs were accepted and not yet written.
func (o *Oracle) Backlog() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.backlog
}

// stopped returns why Add may accept no more IDs, or nil. o.mu is held.
func (o *Oracle) stopped() error {
	switch {
	case o.closed:
		return ErrClosed
	case o.err != nil:
		return o.err
	}
	return nil
}

// newBatch returns an empty batch, reusing a written one. o.mu is held.
func (o *Oracle) newBatch() *batch {
	o.nbatch++
	if n := len(o.free); n > 0 {
		b := o.free[n-1]
		o.free = o.free[:n-1]
		b.reset(o.nbatch)
		return b
	}
	return &batch{seq: o.nbatch, ids: make([]int64, 0, o.cfg.Batch), srcs: make([]int32, 0, o.cfg.Batch)}
}
