package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// The degraded link of scenario 8c, on both ends of each holder's store
// veth (so both directions): 200 ms ± 50 ms of delay, 5 % loss, and 25 %
// of packets (correlated 50 %) sent at once instead of delayed, so they
// overtake the ones before them. Where the kernel has no netem, a token
// bucket stands in: 16 kbit/s with 400 ms of queue, which delays each
// packet by its size and the queue ahead of it and drops what overflows,
// but neither jitters on its own nor reorders.
var (
	degradedNetem = []string{"netem", "delay", "200ms", "50ms", "loss", "5%", "reorder", "25%", "50%"}
	degradedTBF   = []string{"tbf", "rate", "16kbit", "burst", "1600", "latency", "400ms"}
)

// renewals follows one holder's acknowledged renewals by polling when the
// last one was sent (a service's
// snowfence_lease_last_renewal_timestamp_seconds, a library generator's
// stats frame), and keeps the longest gap between two.
type renewals struct {
	name       string
	sent       func(context.Context) (time.Time, error) // the last one's send time; zero: none yet
	first      time.Time
	last       time.Time // send time of the last acknowledged renewal seen
	count      int       // renewals seen after the first
	longestGap time.Duration
}

// serviceRenewals follows s.
func serviceRenewals(s *service) *renewals {
	return &renewals{name: s.name, sent: func(ctx context.Context) (time.Time, error) {
		v, err := s.metric(ctx, "snowfence_lease_last_renewal_timestamp_seconds")
		if err != nil || v <= 0 {
			return time.Time{}, err
		}
		return time.Unix(0, 0).Add(durSeconds(v)), nil
	}}
}

// libraryRenewals follows generator g of l (its stats frames come every
// few milliseconds; the times are the holder's wall clock, which no clock
// fault moves in this scenario, and only their differences are used).
func libraryRenewals(l *library, g int) *renewals {
	return &renewals{name: fmt.Sprintf("%s generator %d", l.name, g), sent: func(context.Context) (time.Time, error) {
		if ms := l.renewed[g].Load(); ms > 0 {
			return time.UnixMilli(ms), nil
		}
		return time.Time{}, nil
	}}
}

// follow polls until ctx ends.
func (r *renewals) follow(ctx context.Context) {
	for {
		if ts, err := r.sent(ctx); err == nil && ts.After(r.last) {
			if r.last.IsZero() {
				r.first = ts
			} else {
				r.count++
				r.longestGap = max(r.longestGap, ts.Sub(r.last))
			}
			r.last = ts
		}
		if pause(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
}

// every is the mean interval between the renewals seen.
func (r *renewals) every() time.Duration {
	if r.count == 0 {
		return 0
	}
	return r.last.Sub(r.first) / time.Duration(r.count)
}

// end closes the record at now: a renewal outstanding counts as a gap.
func (r *renewals) end(now time.Time) {
	if !r.last.IsZero() {
		r.longestGap = max(r.longestGap, now.Sub(r.last))
	}
}

// degradedLink (8c) degrades the zones' store links under load for a
// while: the holders must keep issuing, and refuse only as the fence
// dictates — a service's fenced refusals only after a renewal gap of the
// self-fence or more, and no refusal for any other reason. It reports the
// renewals' rate, gaps and failures.
func degradedLink(e *Env) error {
	t, err := e.drawTimings(netBox)
	if err != nil {
		return err
	}
	w, err := e.startNetWorld()
	if err != nil {
		return err
	}
	qdisc := degradedNetem
	switch err := w.zones[0].store.Supports("netem"); {
	case err == nil:
		e.note("degraded link: tc qdisc %v on both ends of each holder's store veth", qdisc)
	case errors.Is(err, netns.ErrNoQdisc):
		qdisc = degradedTBF
		e.note("degraded link: this kernel has no sch_netem (%v), so tc qdisc %v on both ends of each store veth instead: queueing delay and tail drops, no jitter of its own, no reordering", err, qdisc)
	default:
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 10*time.Second)); err != nil {
		return err
	}
	const fenced = `snowfence_refusals_total{reason="fenced"}`
	type before struct{ ok, refused, failures, fenced float64 }
	bs := make([]before, len(w.cut))
	for i, s := range w.cut {
		bs[i].ok, bs[i].refused = float64(s.ok.Load()), float64(s.refused.Load())
		bs[i].failures, _ = s.metric(e.ctx, "snowfence_lease_renew_failures_total")
		bs[i].fenced, _ = s.metric(e.ctx, fenced)
	}
	_, libBefore := w.refusals()
	libIssued := w.libIssued(e)
	dur := scale(e, 10*time.Second, 120*time.Second)
	for _, z := range w.zones {
		if err := z.store.Impair(qdisc...); err != nil {
			return err
		}
	}
	at := time.Now()
	e.logf("degraded the zones' store links for %v", dur)
	ctx, cancel := context.WithCancel(e.ctx)
	var rs []*renewals
	for _, s := range w.cut {
		rs = append(rs, serviceRenewals(s))
	}
	libFailures := make([]int64, w.lib.cfg.generators)
	for g := range w.lib.cfg.generators {
		rs = append(rs, libraryRenewals(w.lib, g))
		libFailures[g] = w.lib.renewFailures[g].Load()
	}
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { r.follow(ctx) })
	}
	err = e.wait(dur)
	cancel()
	wg.Wait()
	now := time.Now()
	var errs []error
	for _, z := range w.zones {
		errs = append(errs, z.store.Clear())
	}
	if err := errors.Join(append(errs, err)...); err != nil {
		return err
	}
	e.logf("link restored after %v", now.Sub(at).Round(time.Millisecond))
	for _, r := range rs {
		r.end(now)
	}
	for i, s := range w.cut {
		r := rs[i]
		failures, _ := s.metric(e.ctx, "snowfence_lease_renew_failures_total")
		fencedN, _ := s.metric(e.ctx, fenced)
		ok, refused := float64(s.ok.Load())-bs[i].ok, float64(s.refused.Load())-bs[i].refused
		e.note("%s over the degraded link: %d renewals acknowledged, one every %v on average (every %v when healthy), longest gap %v; %.0f renewal failures; %.0f requests answered, %.0f refused (%.0f fenced)",
			s.name, r.count, r.every().Round(time.Millisecond), t.RenewEvery, r.longestGap.Round(time.Millisecond), failures-bs[i].failures, ok, refused, fencedN-bs[i].fenced)
		e.check(s.name+" kept issuing over the degraded link", ok > 0, "%.0f requests answered", ok)
		e.check(s.name+" refused only as the self-fence dictates", refused == 0 || r.longestGap >= t.SelfFence-fenceMargin,
			"%.0f refused, %.0f of them fenced; longest renewal gap %v (self-fence %v)", refused, fencedN-bs[i].fenced, r.longestGap.Round(time.Millisecond), t.SelfFence)
		e.check(s.name+" refused for no other reason", refused <= fencedN-bs[i].fenced, "%.0f refused attempts, %.0f fenced refusals", refused, fencedN-bs[i].fenced)
	}
	_, lib := w.refusals()
	var libGap time.Duration
	for g, r := range rs[len(w.cut):] {
		libGap = max(libGap, r.longestGap)
		e.note("%s over the degraded link: %d renewals acknowledged, one every %v on average, longest gap %v; %d renewal failures",
			r.name, r.count, r.every().Round(time.Millisecond), r.longestGap.Round(time.Millisecond), w.lib.renewFailures[g].Load()-libFailures[g])
	}
	e.note("%s: %d refused library calls over the degraded link", w.lib.name, lib-libBefore)
	issuedAfter := w.libIssued(e)
	e.check(w.lib.name+" kept issuing over the degraded link", issuedAfter > libIssued,
		"highest ID streamed %d before the link degraded, %d at its end; %d refused library calls meanwhile", libIssued, issuedAfter, lib-libBefore)
	e.check(w.lib.name+" refused only as the self-fence dictates", lib == libBefore || libGap >= t.SelfFence-fenceMargin,
		"%d refused library calls; longest renewal gap of a generator %v (self-fence %v)", lib-libBefore, libGap.Round(time.Millisecond), t.SelfFence)
	if _, err := e.waitAllIssuing(w.cut, 30*time.Second); err != nil {
		return fmt.Errorf("after the link was restored: %w", err)
	}
	return e.wait(2 * t.RenewEvery)
}
