//go:build linux

package pgstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// Child holder processes for the soak: the parent re-executes this test
// binary with soakChildEnv set to a JSON soakConfig, and TestSoakChild runs
// keepers and generators on the table, printing one flushed line per event:
//
//	ids <holder> <id> …          one batch, in issue order
//	refused <holder> <error>     a refused batch
//	noclaim <holder> <error>     StartKeeper failed (retried)
//	reqs <stmts> <calls> <extends> <ms>
//	                             SQL statements sent, lease.Store calls and
//	                             of them Extends (renewals) made so far, in
//	                             ms of the process's life
//	fatal <error>                the child could not start
//
// <holder> is the holder's index in its process. Lines are written under one
// lock and flushed at once, so a killed child's unprinted IDs never reach the
// parent. The child exits when its stdin closes (releasing its numbers),
// when its lifetime runs out, or with its parent (SIGKILL on parent death).
const soakChildEnv = "SNOWFENCE_PG_SOAK_CHILD"

type soakConfig struct {
	URL, Table string
	Range      lease.Range
	// Holders is how many keeper+generator pairs the process runs.
	Holders int
	// Batch IDs are taken every Every, per holder.
	Batch int
	Every time.Duration
	// Lifetime bounds the process's life.
	Lifetime time.Duration
	// Keeper timings.
	LeaseFor, RenewEvery, SelfFence time.Duration
}

// stmtCounter is a pgx.QueryTracer counting the statements the pool sends
// to the server: the store's requests, as the database sees them.
type stmtCounter struct{ n atomic.Int64 }

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingStore counts the lease.Store calls made on it (a Claim may send
// several statements: a scan, then one upsert per candidate tried).
type countingStore struct {
	lease.Store
	n, extends atomic.Int64
}

func (s *countingStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.n.Add(1)
	return s.Store.Claim(ctx, req)
}

func (s *countingStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	s.n.Add(1)
	s.extends.Add(1)
	return s.Store.Extend(ctx, l, markMs, leaseFor)
}

func (s *countingStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	s.n.Add(1)
	return s.Store.Release(ctx, l, markMs)
}

func (s *countingStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	s.n.Add(1)
	return s.Store.Get(ctx, machine)
}

func (s *countingStore) List(ctx context.Context) ([]lease.Record, error) {
	s.n.Add(1)
	return s.Store.List(ctx)
}

// soakOut writes whole lines, flushing each.
type soakOut struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (o *soakOut) printf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, format+"\n", args...)
	o.w.Flush()
}

func (o *soakOut) ids(idx int, ids []snowfence.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.w.AvailableBuffer()
	b = append(b, "ids "...)
	b = strconv.AppendInt(b, int64(idx), 10)
	for _, id := range ids {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, '\n')
	o.w.Write(b)
	o.w.Flush()
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// TestSoakChild is not a test: it is the body of a soak child process, and
// skips unless TestSoakKilledHoldersNeverDuplicate started it.
func TestSoakChild(t *testing.T) {
	js := os.Getenv(soakChildEnv)
	if js == "" {
		t.Skip("soak child process: runs only when re-executed by TestSoakKilledHoldersNeverDuplicate")
	}
	out := &soakOut{w: bufio.NewWriter(os.Stdout)}
	var cfg soakConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		out.printf("fatal config: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Lifetime)
	defer cancel()
	go func() { // stdin closing means: release and exit
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		cancel()
	}()
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	stmts := &stmtCounter{}
	pcfg.MaxConns = int32(2 + cfg.Holders)
	pcfg.ConnConfig.Tracer = stmts
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	pool, err := pgxpool.NewWithConfig(cctx, pcfg)
	if err == nil {
		err = pool.Ping(cctx)
	}
	ccancel()
	if err != nil {
		if ctx.Err() == nil { // else told to exit while starting up
			out.printf("fatal %s", oneLine(err))
		}
		return
	}
	defer pool.Close()
	ps, err := pgstore.New(pool, pgstore.Config{Table: cfg.Table})
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	s := &countingStore{Store: ps}
	born := time.Now()
	report := func() {
		out.printf("reqs %d %d %d %d", stmts.n.Load(), s.n.Load(), s.extends.Load(), time.Since(born).Milliseconds())
	}
	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		t := time.NewTicker(200 * time.Millisecond) // pacing, not synchronisation
		defer t.Stop()
		for n := int64(0); n <= int64(cfg.Lifetime/(200*time.Millisecond)); n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				report()
			}
		}
	}()
	me, err := lease.ThisProcess()
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	var wg sync.WaitGroup
	for i := range cfg.Holders {
		wg.Go(func() { runSoakHolder(ctx, cfg, s, fmt.Sprintf("%s/h%d", me, i), i, out) })
	}
	wg.Wait()
	cancel()
	<-reportDone
	report()
}

// runSoakHolder claims a number (retrying while none is free), then takes a
// batch every cfg.Every until ctx ends, printing each batch or refusal; it
// releases the number on the way out.
func runSoakHolder(ctx context.Context, cfg soakConfig, s lease.Store, name string, idx int, out *soakOut) {
	clk := snowfence.SystemClock() // one clock for keeper and generator
	rng := cfg.Range
	var k *lease.Keeper
	for try := 0; k == nil; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond): // retry pacing
			}
			if try > 1000 {
				return
			}
		}
		kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var err error
		k, err = lease.StartKeeper(kctx, lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk,
			LeaseFor: cfg.LeaseFor, RenewEvery: cfg.RenewEvery, SelfFence: cfg.SelfFence, Margin: 0})
		cancel()
		if err != nil && ctx.Err() == nil {
			out.printf("noclaim %d %s", idx, oneLine(err))
		}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		k.Close(cctx)
		cancel()
	}()
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		out.printf("fatal %s", oneLine(err))
		return
	}
	k.SetLastIssued(g.LastIssued)
	t := time.NewTicker(cfg.Every) // pacing, not synchronisation
	defer t.Stop()
	buf := make([]snowfence.ID, 0, cfg.Batch)
	for n := int64(0); n <= int64(cfg.Lifetime/cfg.Every); n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := g.AppendN(ctx, buf[:0], cfg.Batch)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			kind := "other"
			if errors.Is(err, snowfence.ErrFenced) {
				kind = "fenced"
			}
			out.printf("refused %d %s %s", idx, kind, oneLine(err))
			continue
		}
		out.ids(idx, ids)
	}
}
