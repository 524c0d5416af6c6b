package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// probeLane is the lane of the harness's own requests in the collector.
const probeLane = 1 << 20

// probe is the harness's own request to one service, outside the load:
// the deterministic check right after a fault ("the very next request is
// refused"). Its IDs are recorded like any caller's.
func (e *Env) probe(s *service, count int) (mintResult, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
	defer cancel()
	res, err := s.mint(ctx, count, nil)
	if err != nil {
		return res, err
	}
	if res.status == http.StatusOK {
		e.col.record(int32(s.idx), probeLane, res.ids, 0)
	} else {
		e.probeRefused.Add(1)
	}
	return res, nil
}

// startAll starts services concurrently and waits until all serve.
func (e *Env) startServices(n int, cfg serviceConfig) ([]*service, error) {
	out := make([]*service, n)
	for i := range out {
		s, err := e.addService(cfg)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, e.waitServices(out, 60*time.Second)
}

// waitServices waits until every service in ss serves.
func (e *Env) waitServices(ss []*service, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ss))
	for i, s := range ss {
		wg.Go(func() { errs[i] = s.waitServing(e.ctx, timeout) })
	}
	wg.Wait()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// waitAllIssuing waits until every service in ss reports itself issuing,
// and returns when the last one did.
func (e *Env) waitAllIssuing(ss []*service, timeout time.Duration) (time.Time, error) {
	var last time.Time
	for _, s := range ss {
		t, err := e.waitIssuing(s, timeout)
		if err != nil {
			return last, err
		}
		if t.After(last) {
			last = t
		}
	}
	return last, nil
}
