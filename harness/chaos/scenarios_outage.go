package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// A lease-table outage on the default timings (issue 27): the table's server
// frozen (every process SIGSTOPped) while services started with serve's
// default flags for the store (lease.TableTimings: 5 min lease, 5 s
// renewal, 4 min 10 s self-fence, 5 s margin) serve callers. An outage of
// 60 s or of 4 minutes must cost no refusal; one longer than the lease must
// fence every service before its lease's expiry less the margin, and after
// 4 minutes. The long mode runs them: every claim's first grant waits the
// tables' notice window (4 min 40 s) before the outage can begin, and the
// outages are minutes long.

// tableOutage runs the outage of length down; past says whether down is
// past the lease.
func tableOutage(e *Env, down time.Duration) error {
	t := e.fixedTimings("holders", lease.TableTimings(), "the issue's acceptance: serve's default flags for a table store")
	e.storeDefaults = true // the tables' default bound too, in either mode
	past := down >= t.LeaseFor
	nSvc := e.count("services", 2, 4)
	sc := serviceConfig{machines: e.machines("services", nSvc+1, 64)}
	e.note("timings: serve's defaults for the store (lease %v, renewal every %v, self-fence %v, margin %v)", t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin)
	e.cleanups = append(e.cleanups, func() { e.tables.heal(context.WithoutCancel(e.ctx)) })
	// Every claim's first grant waits the tables' notice window: serve
	// answers once it issues.
	started := time.Now()
	svcs := make([]*service, nSvc)
	for i := range svcs {
		s, err := e.addService(sc)
		if err != nil {
			return err
		}
		svcs[i] = s
	}
	if err := e.waitServices(svcs, pgstore.MaxNoticeWindow+time.Minute); err != nil {
		return err
	}
	if _, err := e.waitAllIssuing(svcs, time.Minute); err != nil {
		return err
	}
	e.note("every service issuing %v after start (the claims' notice window, %v)", time.Since(started).Round(time.Second), pgstore.MaxNoticeWindow)
	// No request given up: the callers keep retrying through the whole
	// outage and the claims after it.
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 2000, count: 10, deadline: down + pgstore.MaxNoticeWindow + 2*time.Minute})
	if err := e.wait(2 * t.RenewEvery); err != nil {
		return err
	}
	refusedBefore := load.refused.Load()
	what := e.tables.what()
	if err := e.tables.freeze(); err != nil {
		return err
	}
	at := time.Now()
	e.noteFrozen()
	e.logf("%s frozen for %v", what, down)
	if past {
		// Each service's fence, seen on /healthz; its last acknowledged
		// renewal was sent at most a renewal period (and a round trip)
		// before the freeze.
		fenced := make([]time.Duration, len(svcs))
		errs := make([]error, len(svcs))
		var wg sync.WaitGroup
		for i, s := range svcs {
			wg.Go(func() {
				w, err := e.waitFenced(s, down)
				fenced[i], errs[i] = w.Sub(at), err
			})
		}
		wg.Wait()
		var first, last time.Duration
		for i, err := range errs {
			if err != nil {
				return err
			}
			if i == 0 || fenced[i] < first {
				first = fenced[i]
			}
			last = max(last, fenced[i])
		}
		e.note("services fenced %v to %v into the outage (self-fence %v after the last acknowledged renewal; the lease expires %v after it)",
			first.Round(100*time.Millisecond), last.Round(100*time.Millisecond), t.SelfFence, t.LeaseFor)
		bound := t.LeaseFor - t.Margin - t.RenewEvery
		e.check("every service fenced before its lease's expiry less the margin", last < bound,
			"the last fenced %v into the outage, want below lease − margin − one renewal period = %v", last.Round(100*time.Millisecond), bound)
		e.check("every service rode out the first 4 minutes", first >= 4*time.Minute,
			"the first fenced %v into the outage", first.Round(100*time.Millisecond))
	}
	if err := e.wait(down - time.Since(at)); err != nil {
		return err
	}
	if err := e.tables.thaw(); err != nil {
		return err
	}
	back := time.Now()
	e.note("%s frozen for %v", what, back.Sub(at).Round(time.Millisecond))
	last, err := e.waitAllIssuing(svcs, pgstore.MaxNoticeWindow+time.Minute)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(back), "every service issuing again after "+what+" came back")
	if err := e.wait(2 * t.RenewEvery); err != nil {
		return err
	}
	refused := load.refused.Load() - refusedBefore
	if past {
		e.check("the services refused during the outage past the lease", refused > 0, "%d refused requests", refused)
	} else {
		var unhealthy []string
		for _, s := range svcs {
			if status, _ := e.healthz(s); status != http.StatusOK {
				unhealthy = append(unhealthy, s.name)
			}
		}
		e.check(fmt.Sprintf("no refusal through a %v outage", down), refused == 0 && len(unhealthy) == 0,
			"%d refused requests; not issuing after it: %v", refused, unhealthy)
	}
	load.stop()
	e.outageRecovery(svcs)
	return nil
}
