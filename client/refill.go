package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/snowfence/snowfence"
)

// maxBatchBody is the largest 200 body read: 1,000 IDs of 19 digits in
// quotes take 22,010 bytes; the rest is room for white space.
const maxBatchBody = 64 << 10

// maxErrorBody is how much of an error body is read.
const maxErrorBody = 4 << 10

// refiller runs the refills, one at a time, as Next asks for them.
func (c *Client) refiller() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
		}
		if err := c.refill(); err != nil {
			c.mu.Lock()
			c.endRefillLocked(err)
			c.mu.Unlock()
		}
	}
}

// endRefillLocked records the end of the refill in flight (err nil for
// one that brought every ID it planned) and wakes the callers waiting.
func (c *Client) endRefillLocked(err error) {
	c.refilling = false
	c.ended++
	c.refillErr = err
	if err != nil && !c.closed {
		c.log.Warn("refill failed", "error", err)
	}
	c.broadcastLocked()
}

// refill fetches one refill's IDs, a request of at most 1,000 at a time,
// adding each response's IDs to the buffer as it arrives. A refill that
// succeeds ends in the critical section that adds its last IDs: a caller
// that then takes the buffer down to the low-water mark must find no
// refill in flight, and start the next one. (Ended a moment later, by the
// refiller, a caller could take those IDs in between, see a refill still
// running and start none, and the buffer would run dry before the next
// refill was asked for.) On error it returns the error and the refiller
// ends the refill.
func (c *Client) refill() error {
	c.mu.Lock()
	size := c.planLocked()
	c.mu.Unlock()
	for got := 0; got < size; {
		n := min(size-got, snowfence.MaxBatch)
		ids, sent, err := c.fetch(n)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if c.closed {
			c.discarded += uint64(len(ids))
			c.mu.Unlock()
			return ErrClosed
		}
		// Age counts from the moment the request was sent: the server
		// minted the IDs after it.
		c.buf.push(ids, sent+c.s.MaxAge)
		c.received += uint64(len(ids))
		got += n
		if got >= size {
			c.endRefillLocked(nil)
		} else {
			c.broadcastLocked()
		}
		c.mu.Unlock()
		if c.afterPush != nil {
			c.afterPush()
		}
	}
	return nil
}

// planLocked sizes the next refill from the rate at which IDs were handed
// out since the last one: about rate × RefillPeriod, at most twice and at
// least half the last size, at least MinRefill and what waiting callers
// need, and no more than the buffer has room for. It also sets the
// low-water mark to half the size when Config.LowWater is zero.
func (c *Client) planLocked() int {
	now := c.now()
	c.buf.dropExpired(now, &c.expired)
	size := c.size
	if c.planned {
		if elapsed := now - c.planAt; elapsed > 0 {
			rate := float64(c.handedOut-c.takenAtPlan) / float64(elapsed)
			want := int(min(rate*float64(c.s.RefillPeriod), float64(c.s.MaxBuffer)))
			size = min(max(want, size/2), size*2)
		}
	}
	c.size = min(max(size, c.s.MinRefill), c.s.MaxBuffer)
	c.planned, c.planAt, c.takenAtPlan = true, now, c.handedOut
	if c.s.LowWater == 0 {
		c.low = c.size / 2
	}
	return min(max(c.size, c.demand), c.s.MaxBuffer-c.buf.len())
}

// fetch gets n IDs, retrying and failing over: up to MaxAttempts requests,
// with a jittered exponential wait after each failure (at least the
// Retry-After of a 503 or 429, up to MaxRetryAfter), and none after a
// failure that took an endpoint out of service when another is in
// service. The wait's exponent restarts the first time the fetch fails
// over from each endpoint: a failure says how the endpoint it came from is
// doing, not the next one, so a region with several dead endpoints does not
// leave the last of them (and the healthy region behind it) to be tried
// only after waits grown to seconds. Otherwise it grows, so a fleet that is
// down entirely, or flapping in and out of service, is still backed off
// from. A 4xx other than 429 is returned at once. It returns the IDs and
// the clock's reading when their request was sent.
func (c *Client) fetch(n int) ([]int64, time.Duration, error) {
	var ids []int64
	var sent time.Duration
	err := c.retry(c.ctx, func(base, mint string) (err error) {
		ids, sent, err = c.attempt(base, mint, n)
		return err
	})
	return ids, sent, err
}

// retry runs try against the endpoints as fetch describes: try sends one
// request to the endpoint whose base URL and mint URL it is given. It
// returns ErrClosed once the Client closes, ctx's error once ctx ends
// (when ctx is not the Client's), the first error that is not retried, or
// an *UnavailableError after MaxAttempts.
func (c *Client) retry(ctx context.Context, try func(base, mint string) error) error {
	var last error
	step := 0       // failures since the exponent last restarted
	var left []bool // endpoints this fetch has failed over from
	for a := range c.s.MaxAttempts {
		i, base, mint := c.eps.pick()
		err := try(base, mint)
		if err == nil {
			c.requests.Add(1)
			c.eps.succeeded(i)
			return nil
		}
		if c.ctx.Err() != nil {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c.failures.Add(1)
		last = err
		var se *ServerError
		isServer := errors.As(err, &se)
		if isServer && !se.retryable() {
			return err
		}
		// Over quota is not ill health: the endpoint stays in service and
		// the client waits as it was told.
		failover := false
		if !isServer || se.Status != http.StatusTooManyRequests {
			failover = c.eps.failed(i, err)
		}
		if failover {
			// Not again from the same endpoint: one that answers /healthz
			// but fails every mint is put back by the prober and taken
			// out again, and must not keep a fleet that issues nothing
			// at BaseBackoff.
			if left == nil {
				left = make([]bool, len(c.s.Endpoints))
			}
			if !left[i] {
				step = 0
			}
			left[i] = true
			continue
		}
		if a == c.s.MaxAttempts-1 {
			continue
		}
		var retryAfter time.Duration
		if isServer {
			retryAfter = se.RetryAfter
		}
		if err := c.clock.Sleep(ctx, c.backoff(step, retryAfter)); err != nil {
			if c.ctx.Err() != nil {
				return ErrClosed
			}
			return err
		}
		step++
	}
	return &UnavailableError{Attempts: c.s.MaxAttempts, Last: last}
}

// backoff is the wait after the a-th failure (from 0) since the exponent
// last restarted (see fetch): between half and all of BaseBackoff·2^a, at
// most MaxBackoff; and at least retryAfter (cut to MaxRetryAfter) plus up
// to a tenth more, so that callers told the same Retry-After do not all
// come back in the same instant.
func (c *Client) backoff(a int, retryAfter time.Duration) time.Duration {
	d := c.s.MaxBackoff
	if a < 30 {
		d = min(c.s.BaseBackoff<<a, c.s.MaxBackoff)
	}
	w := d/2 + c.jitter(d/2)
	if retryAfter > 0 {
		r := min(retryAfter, c.s.MaxRetryAfter)
		w = max(w, r+c.jitter(r/10))
	}
	return w
}

func randomJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// attempt sends one request for n IDs. Only a complete 200 whose body
// parses as exactly n strictly increasing IDs yields IDs; a body cut short
// (a dropped connection, a timeout) yields none, whatever part of it came.
func (c *Client) attempt(base, mint string, n int) ([]int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mint+strconv.Itoa(n), nil)
	if err != nil {
		return nil, 0, err
	}
	// Headers are set on each request: a client with a cookie jar adds
	// to the request's header map, so it cannot be shared.
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "snowfence-client")
	sent := c.now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("snowfence client: %w", err)
	}
	defer resp.Body.Close()
	// Config.HTTPClient may follow redirects: IDs from wherever they led
	// are not the endpoint's.
	if r := resp.Request; r != nil && r.URL != req.URL && r.URL.String() != req.URL.String() {
		return nil, 0, badResponse(base, "the answer came from %s, after a redirect", r.URL.Redacted())
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, c.serverError(base, resp)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, 0, badResponse(base, "Content-Type %q is not application/json", resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength > maxBatchBody {
		return nil, 0, badResponse(base, "a body of %d bytes, more than a batch takes", resp.ContentLength)
	}
	body, err := readBody(resp.Body, c.body[:0], maxBatchBody)
	c.body = body[:0]
	if err != nil {
		return nil, 0, fmt.Errorf("snowfence client: reading the answer of %s (no IDs taken from it): %w", base, err)
	}
	ids, bad := parseBatch(c.scratch[:0], body, n)
	if bad != "" {
		return nil, 0, badResponse(base, "%s", bad)
	}
	if c.marks != nil {
		if why := c.marks.check(ids); why != "" {
			return nil, 0, badResponse(base, "%s", why)
		}
	}
	return ids, sent, nil
}

// readBody reads r to its end into buf, refusing more than max bytes.
func readBody(r io.Reader, buf []byte, max int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := r.Read(buf[len(buf):min(cap(buf), max+1)])
		buf = buf[:len(buf)+k]
		switch {
		case len(buf) > max:
			return buf, fmt.Errorf("the body is over %d bytes", max)
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return buf, err
		}
	}
}

// serverError reads a non-200 answer.
func (c *Client) serverError(base string, resp *http.Response) *ServerError {
	e := &ServerError{Endpoint: base, Status: resp.StatusCode, RetryAfter: c.retryAfter(resp.Header.Get("Retry-After"))}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error struct {
			Code, Message, Reason string
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil {
		e.Code, e.Message, e.Reason = body.Error.Code, body.Error.Message, body.Error.Reason
	}
	return e
}

// retryAfter reads a Retry-After header: whole seconds, or an HTTP date
// (measured against Clock's wall clock). Anything else is zero.
func (c *Client) retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseUint(h, 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Duration(t.UnixMilli()-c.clock.Now().WallMs) * time.Millisecond; d > 0 {
			return d
		}
	}
	return 0
}
