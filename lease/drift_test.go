package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// The self-fence (2 s here, 5 s by default) must end a cut-off holder's
// issuing before its etcd lease (3 s here, 10 s by default) can expire and
// its number be claimed by someone else, even with the holder's clock 8 %
// slow or fast and etcd's 8 % fast: SelfFence×1.08 < LeaseFor×0.92, which
// the keeper checks in its configuration (docs/design.md#timings; chrony
// slews at most 1/12).

// TestSelfFenceHoldsWithDriftingClocks runs holder A on a clock 8 % slow
// (then fast) and cuts it off from etcd; holder B, on a clock drifting the
// other way, tries to claim A's number until it succeeds. In real time, A's
// last issue comes before B's claim, and every ID of A's is below every ID
// of B's on that number.
func TestSelfFenceHoldsWithDriftingClocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		rateA, rateB float64
	}{
		{"A 8% slow, B 8% fast", 0.92, 1.08},
		{"A 8% fast, B 8% slow", 1.08, 0.92},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 5
			c := etcdtest.Start(t, 1)
			p := startProxy(t, c.Endpoint(0))
			prefix := "/test/" + t.Name()
			sA := connectStore(t, []string{p.URL()}, prefix)
			sB := connectStore(t, c.Endpoints(), prefix)

			clkA := newDriftClock(tc.rateA)
			a := startMinter(t, sA, clkA, "A", lease.Range{Lo: n, Hi: n}, time.Millisecond, 1, shortTimings)
			// Let A renew a few times, then cut it off.
			if !pollUntil(10*time.Second, 20*time.Millisecond, func() bool {
				return a.issued() > 0 && time.Since(a.started) > 1200*time.Millisecond
			}) {
				t.Fatalf("A issued nothing: %+v", a.k.Status())
			}
			p.Cut()
			cutAt := time.Now()

			// B claims A's number as soon as etcd lets it: after A's etcd
			// lease expired. The start of the successful attempt is an
			// instant before the claim.
			var bStart time.Time
			var b *minter
			if !pollUntil(15*time.Second, 50*time.Millisecond, func() bool {
				at := time.Now()
				m, err := tryStartMinter(t, sB, newDriftClock(tc.rateB), "B", lease.Range{Lo: n, Hi: n}, time.Millisecond, 1, shortTimings)
				if err != nil {
					if !errors.Is(err, lease.ErrNoFreeNumber) {
						t.Logf("B's claim: %v", err)
					}
					return false
				}
				bStart, b = at, m
				return true
			}) {
				t.Fatalf("B never claimed machine %d; A's record: %+v", n, mustGetRecord(t, sB, n))
			}
			if !pollUntil(10*time.Second, 10*time.Millisecond, func() bool { return b.issued() > 0 }) {
				t.Fatalf("B claimed but issued nothing: %+v, %v", b.k.Status(), b.lastErr())
			}
			a.halt()
			b.halt()
			if _, err := a.g.Next(context.Background()); !isFenced(err) {
				t.Errorf("A after B's claim: err = %v, want ErrFenced", err)
			}

			aIDs, bIDs := a.allIDs(), b.allIDs()
			aLast, bFirst := aIDs[len(aIDs)-1], bIDs[0]
			lastSent := a.k.Status().LastRenewal // A's wall clock at the last acknowledged renewal's send
			aLastTs := snowfence.V1().TimeOf(aLast)
			t.Logf("A (rate %.2f): %d IDs, last renewal sent %v before the cut, last issue %v after the cut (its timestamp %v after that send on A's clock), first refusal %v after the cut",
				tc.rateA, len(aIDs), cutAt.Sub(clkA.realAt(lastSent)).Round(time.Millisecond), a.lastOKAt().Sub(cutAt).Round(time.Millisecond),
				aLastTs.Sub(lastSent), a.firstRefusalAfter(cutAt).Sub(cutAt).Round(time.Millisecond))
			t.Logf("B (rate %.2f): claim attempt started %v after the cut, first ID %v", tc.rateB, bStart.Sub(cutAt).Round(time.Millisecond), bFirst)

			// On A's own clock, nothing was issued SelfFence or more after
			// the send of its last acknowledged renewal. Both readings are
			// whole milliseconds, cut down, so their difference may reach
			// SelfFence itself but not exceed it.
			if d := aLastTs.Sub(lastSent); d > shortSelfFence {
				t.Errorf("A issued %v after its last acknowledged renewal on its own clock, want < SelfFence %v (+ < 1 ms of rounding)", d, shortSelfFence)
			}
			// In real time, A's last issue precedes B's claim: both the
			// instant Next returned and the instant A's clock read the
			// last ID's millisecond (scheduling cannot delay the latter).
			if !a.lastOKAt().Before(bStart) {
				t.Errorf("A's last Next returned at %v, not before B's successful claim attempt began at %v", a.lastOKAt(), bStart)
			}
			if at := clkA.realAt(aLastTs.Add(time.Millisecond)); !at.Before(bStart) {
				t.Errorf("A's clock read its last ID's millisecond until %v, not before B's claim attempt began at %v", at, bStart)
			}
			if aLast >= bFirst {
				t.Errorf("A's last ID %d (%v) is not below B's first %d (%v) on machine %d", aLast, aLastTs, bFirst, snowfence.V1().TimeOf(bFirst), n)
			}
			checkUnique(t, aIDs, bIDs)
		})
	}
}

// TestSelfFenceDriftFakeClock is the deterministic version: A's fake clock
// runs 8 % slow (then fast) against the true time the test advances, and A
// is cut off from etcd after a scheduled renewal. A still issues just before
// true time SelfFence/rate after that renewal's send, and refuses just
// after; with rate 0.92 that instant, 2.17 s, is below LeaseFor×0.92 =
// 2.76 s, the earliest an etcd whose clock runs 8 % fast can expire a 3 s
// lease.
func TestSelfFenceDriftFakeClock(t *testing.T) {
	t.Parallel()
	for _, rate := range []float64{0.92, 1.08} {
		t.Run(fmt.Sprintf("rate %.2f", rate), func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			p := startProxy(t, c.Endpoint(0))
			s := connectStore(t, []string{p.URL()}, "/test/"+t.Name())
			clk := fakeclock.New(t0)
			clk.SetRate(rate)
			h := mustHolder(t, s, clk, "a", lease.Range{Lo: 4, Hi: 4}, shortTimings,
				func(kc *lease.KeeperConfig) { kc.RequestTimeout = 300 * time.Millisecond })
			h.mint(10)

			// One scheduled renewal: the keeper sleeps RenewEvery on A's
			// clock, which takes RenewEvery/rate of true time.
			claimed, _ := h.k.Grant()
			h.step(time.Duration(float64(shortRenewEvery)/rate) + time.Millisecond)
			g, err := h.k.Grant()
			if err != nil || g.RenewedAt == claimed.RenewedAt {
				t.Fatalf("no scheduled renewal: grant %+v, %v", g, err)
			}
			h.mint(10)
			p.Cut() // every later renewal fails

			fence := time.Duration(float64(shortSelfFence) / rate) // true time from the send to the refusal
			h.step(fence - 5*time.Millisecond)
			if _, err := h.g.Next(context.Background()); err != nil {
				t.Fatalf("true time %v after the last acknowledged send (A's clock: %v): %v, want an ID (the window on A's clock is not over)",
					fence-5*time.Millisecond, clk.Now().Mono-g.RenewedAt, err)
			}
			if st := h.k.Status(); st.RenewFailures == 0 {
				t.Errorf("no renewal failed while cut off: %+v", st)
			}
			h.step(6 * time.Millisecond)
			_, err = h.g.Next(context.Background())
			var fe *snowfence.FencedError
			if !errors.As(err, &fe) || fe.Reason != "renewal-overdue" {
				t.Fatalf("true time %v after the last acknowledged send: %v, want ErrFenced (renewal-overdue)", fence+time.Millisecond, err)
			}
			// In the fake clock's terms: the generator refuses exactly when
			// its monotonic reading is SelfFence past the send.
			if e := clk.Now().Mono - g.RenewedAt; e < shortSelfFence || e > shortSelfFence+2*time.Millisecond {
				t.Errorf("refused %v after the send on A's clock, want SelfFence %v (+ the step)", e, shortSelfFence)
			}
			etcdEarliest := time.Duration(float64(shortLeaseFor) * 0.92)
			if fence+time.Millisecond >= etcdEarliest {
				t.Errorf("A refuses %v after its last send, not before %v, when an etcd running 8 %% fast may expire its lease",
					fence+time.Millisecond, etcdEarliest)
			}
			t.Logf("rate %.2f: issuing at %v, refused at %v of true time after the send; the lease can expire no earlier than %v",
				rate, fence-5*time.Millisecond, fence+time.Millisecond, etcdEarliest)
		})
	}
}

// driftClock is a snowfence.Clock on real time running at rate (0.92 is
// 8 % slow) around the moment it was made: its wall and monotonic readings
// both advance rate times as fast as real time, and its sleeps and waits
// last accordingly.
type driftClock struct {
	rate   float64
	start  time.Time // real, with its monotonic reading
	wallNs int64     // the wall reading at start, Unix ns
}

var _ snowfence.Clock = (*driftClock)(nil)

func newDriftClock(rate float64) *driftClock {
	now := time.Now()
	return &driftClock{rate: rate, start: now, wallNs: now.UnixNano()}
}

func (c *driftClock) elapsed() time.Duration {
	return time.Duration(float64(time.Since(c.start)) * c.rate)
}

func (c *driftClock) Now() snowfence.Reading {
	e := c.elapsed()
	return snowfence.Reading{WallMs: (c.wallNs + int64(e)) / 1e6, Mono: time.Hour + e}
}

func (c *driftClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(float64(d) / c.rate))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *driftClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	for {
		r := c.Now()
		if r.WallMs >= wallMs {
			return r, nil
		}
		left := time.Duration(wallMs-r.WallMs) * time.Millisecond
		if err := c.Sleep(ctx, max(left-time.Millisecond, 50*time.Microsecond)); err != nil {
			return c.Now(), err
		}
	}
}

// realAt is the real time at which the clock's wall reading is w.
func (c *driftClock) realAt(w time.Time) time.Time {
	return c.start.Add(time.Duration(float64(w.UnixNano()-c.wallNs) / c.rate))
}

// proxy is a loopback TCP proxy in front of one etcd endpoint, which a test
// cuts to take a holder off the network: Cut closes every connection and
// the listener, so new connections are refused.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// startProxy proxies to endpoint (an http://127.0.0.1:port URL) until the
// test ends or Cut.
func startProxy(t *testing.T, endpoint string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: strings.TrimPrefix(endpoint, "http://"), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// URL is the endpoint to give the proxied client.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed by Cut
		}
		out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies src to dst until either side closes, then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Cut closes the listener and every connection.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

// connectStore connects a store of its own (its own etcd client) to
// endpoints, keeping its keys under prefix.
func connectStore(t *testing.T, endpoints []string, prefix string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Connect(testCtx(t), etcdstore.ClientConfig{Endpoints: endpoints, DialTimeout: 5 * time.Second},
		etcdstore.Config{Prefix: prefix, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustGetRecord(t *testing.T, s lease.Store, n int) lease.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rec, err := s.Get(ctx, n)
	if err != nil {
		t.Logf("Get(%d): %v", n, err)
	}
	return rec
}

// checkUnique fails the test if any ID occurs twice across the lists.
func checkUnique(t *testing.T, lists ...[]snowfence.ID) int {
	t.Helper()
	seen := make(map[snowfence.ID]bool)
	dups := 0
	for _, l := range lists {
		for _, id := range l {
			if seen[id] {
				dups++
				if dups <= 5 {
					t.Errorf("ID %d issued twice", id)
				}
			}
			seen[id] = true
		}
	}
	if dups > 0 {
		t.Errorf("%d duplicate IDs among %d", dups, len(seen)+dups)
	}
	return len(seen)
}

// pollUntil calls cond every interval until it returns true or d passes,
// for waits on real time (etcd lease TTLs, elections, process states); it
// reports whether cond came true.
func pollUntil(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-t.C
	}
}
