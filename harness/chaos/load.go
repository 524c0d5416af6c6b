package chaos

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// loadConfig shapes the callers' load on the services.
type loadConfig struct {
	callers int
	// rate is the IDs per second of all callers together; 0 sends
	// requests back to back.
	rate  int
	count int // IDs per request
	// deadline is how long a caller keeps retrying one request on other
	// services before counting it lost. Zero: 90 s, longer than any outage
	// a scenario makes, so a lost request is a request the system lost.
	deadline time.Duration
	// attempt bounds one HTTP attempt. Zero: 1 s.
	attempt time.Duration
	// checkAhead checks that no ID's timestamp is after its arrival.
	checkAhead bool
}

// load is the callers: each sends requests at its share of the rate, to
// the services in turn, and retries a refused or failed request on the
// next service until one answers with IDs — what a careful client does.
type load struct {
	env      *Env
	cfg      loadConfig
	services []*service
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	requests, refused, failed, lost atomic.Int64
	ids                             atomic.Int64
	started, stopped                time.Time
}

// startLoad starts the callers.
func (e *Env) startLoad(services []*service, cfg loadConfig) *load {
	if cfg.deadline == 0 {
		cfg.deadline = 90 * time.Second
	}
	if cfg.attempt == 0 {
		cfg.attempt = time.Second
	}
	ctx, cancel := context.WithCancel(e.ctx)
	l := &load{env: e, cfg: cfg, services: services, cancel: cancel, started: time.Now()}
	for i := range cfg.callers {
		l.wg.Go(func() { l.caller(ctx, i) })
	}
	e.loads = append(e.loads, l)
	return l
}

// stop stops new requests and waits for the ones in flight to be answered
// (or lost).
func (l *load) stop() {
	if !l.stopped.IsZero() {
		return
	}
	l.cancel()
	l.wg.Wait()
	l.stopped = time.Now()
	d := l.stopped.Sub(l.started)
	l.env.note("callers: %s IDs in %s requests over %.1f s = %s IDs/s (target %s)", thousands(l.ids.Load()), thousands(l.requests.Load()),
		d.Seconds(), thousands(int64(float64(l.ids.Load())/d.Seconds())), rateText(l.cfg.rate))
}

// rateText describes a target rate.
func rateText(rate int) string {
	if rate == 0 {
		return "back to back"
	}
	return thousands(int64(rate)) + "/s"
}

func (l *load) caller(ctx context.Context, idx int) {
	var every time.Duration
	if l.cfg.rate > 0 {
		every = time.Duration(float64(time.Second) * float64(l.cfg.count*l.cfg.callers) / float64(l.cfg.rate))
	}
	buf := make([]int64, 0, l.cfg.count)
	next := time.Now()
	turn := idx
	for ctx.Err() == nil {
		if every > 0 {
			var err error
			if next, err = paced(ctx, next, every); err != nil {
				return
			}
		}
		turn = l.request(ctx, idx, turn, buf)
	}
}

// request gets one batch of IDs, trying services in turn from turn, and
// returns where the next request starts. A request that started is seen
// through even after stop: only its deadline ends it.
func (l *load) request(stopCtx context.Context, idx, turn int, buf []int64) int {
	l.requests.Add(1)
	ctx := context.WithoutCancel(stopCtx)
	deadline := time.Now().Add(l.cfg.deadline)
	n := len(l.services)
	skip := make([]time.Time, n) // a service that failed is skipped a moment
	for tries := 0; ; tries++ {
		if time.Now().After(deadline) {
			l.lost.Add(1)
			l.env.logf("caller %d: request lost after %v of retries", idx, l.cfg.deadline)
			return turn
		}
		pos := turn % n
		s := l.services[pos]
		turn++
		if tries > 0 && tries%n == 0 {
			pause(ctx, 5*time.Millisecond) // every service refused: back off
		}
		if time.Now().Before(skip[pos]) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, l.cfg.attempt)
		res, err := s.mint(actx, l.cfg.count, buf)
		cancel()
		if err == nil && res.status == 200 {
			var recv int64
			if l.cfg.checkAhead {
				recv = time.Now().UnixMilli()
			}
			l.env.col.record(int32(s.idx), int32(idx), res.ids, recv)
			now := time.Now()
			s.ok.Add(1)
			s.answered(true, now)
			l.ids.Add(int64(len(res.ids)))
			return turn
		}
		if !errors.Is(err, errNotServing) {
			s.answered(false, time.Now())
		}
		switch {
		case err == nil:
			s.refused.Add(1)
			l.refused.Add(1)
			skip[pos] = time.Now().Add(20 * time.Millisecond)
		case errors.Is(err, errNotServing):
			// down or starting: nothing was sent
		default:
			s.errors.Add(1)
			s.lastErr.Store(err.Error())
			l.failed.Add(1)
			skip[pos] = time.Now().Add(250 * time.Millisecond)
		}
	}
}
