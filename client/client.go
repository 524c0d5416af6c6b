package client

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
)

// Client hands out IDs from a buffer it keeps filled from the servers of
// Config.Endpoints. Create it with New and Close it when done. A Client is
// safe for concurrent use.
type Client struct {
	s    *settings
	http *http.Client
	own  bool // http is the Client's own: Close closes its idle connections
	log  *slog.Logger
	// clock sleeps and reads the wall clock; with fastMono the monotonic
	// clock is read with time.Since(origin) instead (Config.Clock nil).
	clock    snowfence.Clock
	fastMono bool
	origin   time.Time
	eps      *endpoints
	// jitter returns a random duration in [0, d]; tests replace it.
	jitter func(d time.Duration) time.Duration

	mu  sync.Mutex
	buf buffer
	// refilling is true from the moment a refill is asked for until it
	// ends: at most one runs.
	refilling bool
	closed    bool
	// wake is closed (and replaced) when IDs arrive, a refill ends, or the
	// Client closes, if anyone waits on it.
	wake    chan struct{}
	waiters int
	// demand is how many IDs waiting callers still need.
	demand int
	// ended counts the refills that ended; refillErr is the last one's
	// error (nil if it brought all it asked for).
	ended     uint64
	refillErr error
	// afterPush, if set (by tests), runs after each response's IDs are
	// in the buffer and the mutex is released.
	afterPush func()
	// size is the current refill size, low the current low-water mark;
	// planAt and takenAtPlan are the clock and handedOut at the last plan.
	size, low   int
	planned     bool
	planAt      time.Duration
	takenAtPlan uint64
	handedOut   uint64
	received    uint64
	expired     uint64
	discarded   uint64

	requests, failures atomic.Uint64

	// Owned by the refill goroutine.
	kick    chan struct{}
	body    []byte
	scratch []int64
	// marks is the check of Config.Schedule, nil without it.
	marks *marks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New checks cfg and returns a Client with an empty buffer; the first Next
// fills it. It starts two goroutines (the refill and the health probes),
// which Close stops. New sends no request. Every error matches
// ErrInvalidConfig.
func New(cfg Config) (*Client, error) {
	s, err := check(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{
		s:       s,
		http:    s.HTTPClient,
		log:     s.Logger,
		clock:   s.Clock,
		origin:  time.Now(),
		eps:     newEndpoints(s),
		jitter:  randomJitter,
		buf:     newBuffer(s.MaxBuffer),
		wake:    make(chan struct{}),
		size:    s.MinRefill,
		low:     s.LowWater,
		kick:    make(chan struct{}, 1),
		scratch: make([]int64, 0, snowfence.MaxBatch),
	}
	if s.checkRepeats {
		c.marks = newMarks(s.schedule)
	}
	if c.low == 0 {
		c.low = c.size / 2
	}
	if c.clock == nil {
		c.clock, c.fastMono = snowfence.SystemClock(), true
	}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if s.TLS != nil {
			tr.TLSClientConfig = s.TLS.Clone()
		}
		// A redirect is not an answer: only an endpoint's own 200 carries
		// IDs, so the 3xx itself is the attempt's (failed) answer.
		noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		c.http, c.own = &http.Client{Transport: tr, CheckRedirect: noRedirect}, true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(2)
	go c.refiller()
	go c.prober()
	return c, nil
}

// now reads the monotonic clock.
func (c *Client) now() time.Duration {
	if c.fastMono {
		return time.Since(c.origin)
	}
	return c.clock.Now().Mono
}

// Next returns the next ID from the buffer. From a warm buffer it takes a
// mutex and reads the monotonic clock once, and allocates nothing. The
// clock is read on every call, under the mutex, because that is the only
// way to be sure no ID is handed out past MaxAge: a background timer that
// dropped chunks as they expired would fire late under load, and a clock
// read once for several calls would be stale. It is compared with the
// oldest chunk's deadline; there is no timestamp per ID. When the buffer is
// empty it waits for the refill in flight (or starts one), until ctx is
// done. The errors are ctx's, ErrClosed, and those of the refill it waited
// for (matching ErrUnavailable, ErrRejected, ...).
func (c *Client) Next(ctx context.Context) (snowfence.ID, error) {
	c.mu.Lock()
	if id, ok := c.buf.take(c.now(), &c.expired); ok {
		c.handedOut++
		if c.buf.len() <= c.low && !c.refilling {
			c.startRefillLocked()
		}
		c.mu.Unlock()
		return snowfence.ID(id), nil
	}
	c.mu.Unlock()
	var one [1]snowfence.ID
	ids, err := c.AppendN(ctx, one[:0], 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// NextN returns n IDs (1 ≤ n ≤ 1000, and at most Config.MaxBuffer) in the
// order the buffer holds them. On
// error it returns no IDs; any it had taken are discarded, never handed out.
// When the buffer holds fewer than n it takes what is there and waits for
// a refill; the IDs it holds age meanwhile, and if the oldest reaches
// MaxAge before the call can return it drops them all (counted in
// Stats.Expired) and takes again, so no ID it returns has reached MaxAge
// at the moment it returns.
func (c *Client) NextN(ctx context.Context, n int) ([]snowfence.ID, error) {
	if n < 1 || n > snowfence.MaxBatch {
		return nil, countError(n)
	}
	return c.AppendN(ctx, make([]snowfence.ID, 0, n), n)
}

func countError(n int) error {
	return fmt.Errorf("%w: %d; ask for 1 to %d IDs", snowfence.ErrInvalidCount, n, snowfence.MaxBatch)
}

// AppendN is NextN appending to dst; with room in dst it allocates nothing
// from a warm buffer. On error it returns dst as it was.
func (c *Client) AppendN(ctx context.Context, dst []snowfence.ID, n int) ([]snowfence.ID, error) {
	if n < 1 || n > snowfence.MaxBatch {
		return dst, countError(n)
	}
	if n > c.s.MaxBuffer {
		// The n IDs would have to come from several refills, the first
		// ones ageing while the later ones arrive; past MaxAge they are
		// dropped and gathered again, without end (an attack found the
		// call spinning, 11,000 requests in 2 s).
		return dst, fmt.Errorf("%w: %d is more than the buffer holds (Config.MaxBuffer %d); ask for at most MaxBuffer IDs at once, or raise MaxBuffer", snowfence.ErrInvalidCount, n, c.s.MaxBuffer)
	}
	start := len(dst)
	// deadline is the earliest deadline of the chunks the IDs in
	// dst[start:] came from: they age while the call waits for more, and
	// none may be handed out once it has passed.
	deadline := noDeadline
	c.mu.Lock()
	for {
		now := c.now()
		dst = c.takeLocked(dst, n-(len(dst)-start), now, &deadline)
		if now >= deadline {
			// Held past MaxAge while waiting for a refill: drop them all
			// (IDs come out oldest first, so the rest are the newest) and
			// take again from what the refill brought.
			k := uint64(len(dst) - start)
			c.expired += k
			c.handedOut -= k
			dst, deadline = dst[:start], noDeadline
			continue
		}
		// now was read under the mutex, just now: no ID in dst has
		// reached its deadline when the call returns.
		if len(dst)-start == n {
			c.mu.Unlock()
			return dst, nil
		}
		if c.closed {
			return c.abandonLocked(dst, start, ErrClosed)
		}
		need := n - (len(dst) - start)
		if !c.refilling {
			c.startRefillLocked()
		}
		ended, wake := c.ended, c.wake
		c.demand += need
		c.waiters++
		c.mu.Unlock()
		var err error
		select {
		case <-wake:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.demand -= need
		c.waiters--
		switch {
		case err != nil:
			return c.abandonLocked(dst, start, err)
		case c.closed:
			return c.abandonLocked(dst, start, ErrClosed)
		case c.ended != ended && c.refillErr != nil && c.buf.len() == 0:
			return c.abandonLocked(dst, start, c.refillErr)
		}
	}
}

// noDeadline is a deadline never reached.
const noDeadline = time.Duration(math.MaxInt64)

// takeLocked appends up to n IDs from the buffer that have not expired at
// now to dst, lowers *deadline to the earliest deadline among them, and
// starts a refill if the buffer is at its low-water mark.
func (c *Client) takeLocked(dst []snowfence.ID, n int, now time.Duration, deadline *time.Duration) []snowfence.ID {
	before := len(dst)
	dst = takeN(&c.buf, dst, n, now, &c.expired, deadline)
	c.handedOut += uint64(len(dst) - before)
	if c.buf.len() <= c.low && !c.refilling && !c.closed {
		c.startRefillLocked()
	}
	return dst
}

// abandonLocked ends a waiting AppendN with err: the IDs it took are
// discarded. It unlocks c.mu.
func (c *Client) abandonLocked(dst []snowfence.ID, start int, err error) ([]snowfence.ID, error) {
	c.discarded += uint64(len(dst) - start)
	c.handedOut -= uint64(len(dst) - start)
	c.mu.Unlock()
	return dst[:start], err
}

// startRefillLocked asks the refill goroutine for a refill.
func (c *Client) startRefillLocked() {
	c.refilling = true
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// broadcastLocked wakes the callers waiting for IDs.
func (c *Client) broadcastLocked() {
	if c.waiters > 0 || c.closed {
		close(c.wake)
		c.wake = make(chan struct{})
	}
}

// Close stops the Client: it waits for its goroutines to end (a request in
// flight is abandoned, its IDs never handed out), drops the IDs in the
// buffer, and makes every waiting and later call fail with ErrClosed. With
// the Client's own HTTP client it closes its idle connections. Close is
// idempotent and returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.discarded += uint64(c.buf.clear())
	c.broadcastLocked()
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.own {
		c.http.CloseIdleConnections()
	}
	return nil
}

// Stats is a snapshot of a Client's counters.
type Stats struct {
	// Buffered is the number of IDs in the buffer (expired ones not yet
	// dropped included).
	Buffered int
	// HandedOut counts the IDs returned by Next, NextN and AppendN.
	HandedOut uint64
	// Received counts the IDs of every 200 taken into the buffer.
	Received uint64
	// Expired counts IDs dropped for age: those that reached MaxAge in
	// the buffer, and those a NextN or AppendN had taken and held while
	// it waited for a refill, once the oldest of them reached MaxAge.
	Expired uint64
	// Discarded counts IDs dropped by Close or by a NextN that failed.
	Discarded uint64
	// Requests counts the mint requests that brought IDs; Failures the
	// ones that did not.
	Requests, Failures uint64
	// Endpoint is the index in Config.Endpoints of the endpoint requests
	// go to now (the first in service), or -1 when none is in service.
	Endpoint int
	// InService tells, per endpoint, whether it is in service.
	InService []bool
}

// Stats returns the Client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	st := Stats{Buffered: c.buf.len(), HandedOut: c.handedOut, Received: c.received, Expired: c.expired, Discarded: c.discarded}
	c.mu.Unlock()
	st.Requests, st.Failures = c.requests.Load(), c.failures.Load()
	st.Endpoint, st.InService = c.eps.snapshot()
	return st
}
