package pgstore_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// What a cutProxy does to the next statement armed.
const (
	cutNothing  = iota
	cutRequest  // drops the statement and closes: it never reaches the server
	cutResponse // drops the server's answer and closes: it committed, the client never hears
)

// cutProxy is a loopback TCP proxy in front of the test server that cuts
// one connection at the statement armed. The pool behind it uses the
// simple protocol, so each statement is one message and the server's
// first bytes in answer come after its implicit transaction committed.
type cutProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	cut    chan struct{} // a value per cut made
	onCut  func()        // run after a response is dropped, before the client's connection closes
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cut: make(chan struct{}, 4)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s, cutRequest)
		go p.pipe(s, c, cutResponse)
	}
}

// pipe copies from src to dst until either closes, or cuts both when the
// proxy is armed with mode and bytes arrive.
func (p *cutProxy) pipe(src, dst net.Conn, mode int32) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && p.mode.CompareAndSwap(mode, cutNothing) {
			if mode == cutResponse && p.onCut != nil {
				p.onCut()
			}
			p.cut <- struct{}{}
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// armOn is a pgx tracer that arms the proxy when the statement sql starts
// (any statement when sql is empty).
type armOn struct {
	p    *cutProxy
	sql  string
	mode atomic.Int32 // what to arm the proxy with; cutNothing: disarmed
}

func (a *armOn) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if a.sql == "" || d.SQL == a.sql {
		if m := a.mode.Swap(cutNothing); m != cutNothing {
			a.p.mode.Store(m)
		}
	}
	return ctx
}

func (a *armOn) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// cutStore returns a store on table through a cutProxy, and the tracer
// that arms the proxy on the claim statement.
func cutStore(t *testing.T, table string) (*pgstore.Store, *cutProxy, *armOn) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newCutProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", uint16(p.ln.Addr().(*net.TCPAddr).Port)
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.MaxConns = 2
	arm := &armOn{p: p}
	cfg.ConnConfig.Tracer = arm
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := openStore(t, pool, table)
	arm.sql, _ = s.ClaimStatement(lease.ClaimRequest{Holder: "x", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: 1, LeaseFor: time.Second}, 0, "")
	return s, p, arm
}

// TestJournalUnknownOutcome: a claim whose statement fails with an error
// of unknown outcome. Cut after the server committed, the claim is
// adopted and the journal has its entry, exactly once; cut before the
// server saw it, the claim fails and the journal has no entry; cut after
// it committed but overtaken before the claimer re-read the row (a raise
// of the marks fenced it), the claim fails and its entry, which the same
// statement wrote, is ended at its start: an empty interval, naming
// nobody for the timestamps its lease reserved.
func TestJournalUnknownOutcome(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	direct := openStore(t, pool, table)
	s, p, arm := cutStore(t, table)
	nowMs := time.Now().UnixMilli()
	req := func(n int) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: "cut", Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	wasCut := func() {
		t.Helper()
		select {
		case <-p.cut:
		default:
			t.Fatal("the proxy never cut the claim statement: the test did not reach the error of unknown outcome")
		}
	}

	t.Run("committed, adopted", func(t *testing.T) {
		arm.mode.Store(cutResponse)
		l, err := s.Claim(t.Context(), req(1))
		wasCut()
		if err != nil {
			t.Fatalf("claim cut after it committed: %v, want it adopted", err)
		}
		h := leasetest.MustHistory(t, direct, 1)
		if len(h) != 1 || h[0].Claim != l.Claim || h[0].Token != l.Token || h[0].StartMs != l.StartMs || h[0].End != lease.EndNone {
			t.Fatalf("journal after the adopted claim %v = %+v, want its one entry, open", l, h)
		}
		if ivs := leasetest.MustIntervals(t, direct, 1); ivs[0].State != lease.StateHolding {
			t.Errorf("interval of the adopted claim = %+v, want holding", ivs[0])
		}
	})
	t.Run("never reached the server", func(t *testing.T) {
		arm.mode.Store(cutRequest)
		l, err := s.Claim(t.Context(), req(2))
		wasCut()
		if err == nil {
			t.Fatalf("claim cut before the server saw it = %v, want an error", l)
		}
		if h := leasetest.MustHistory(t, direct, 2); len(h) != 0 {
			t.Errorf("journal after a claim that did not commit = %+v, want none", h)
		}
	})
	t.Run("committed, overtaken before the re-read", func(t *testing.T) {
		raised := nowMs + 60_000
		p.onCut = func() {
			if _, err := direct.RaiseMarks(context.Background(), lease.Range{Lo: 3, Hi: 3}, raised); err != nil {
				t.Errorf("RaiseMarks: %v", err)
			}
		}
		defer func() { p.onCut = nil }()
		arm.mode.Store(cutResponse)
		l, err := s.Claim(t.Context(), req(3))
		wasCut()
		if err == nil {
			t.Fatalf("claim overtaken by a raise before its re-read = %v, want an error", l)
		}
		h := leasetest.MustHistory(t, direct, 3)
		if len(h) != 1 || h[0].End != lease.EndReleased || h[0].EndMs != h[0].StartMs {
			t.Fatalf("journal after a committed claim not adopted = %+v, want its entry ended at its start", h)
		}
		ivs := leasetest.MustIntervals(t, direct, 3)
		if iv, err := lease.Who(ivs, h[0].StartMs); !errors.Is(err, lease.ErrNotInJournal) {
			t.Errorf("Who(start of the claim given back) = %+v, %v; want ErrNotInJournal", iv, err)
		}
		next := leasetest.MustClaim(t, direct, req(3))
		if next.StartMs < raised {
			t.Errorf("next claim starts at %d, want ≥ the raised mark %d", next.StartMs, raised)
		}
		leasetest.MustIntervals(t, direct, 3)
	})
}
