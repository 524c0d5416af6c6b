package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// cutter makes and ends a partition between the zones' holders and the
// store with the kernel: tc netem loss 100% on both ends of each store
// link where the kernel has netem, the host end's link taken down where it
// does not. Either way a SYN gets no answer and a connection's segments
// are dropped until the cut ends; the callers' links are untouched.
type cutter struct {
	zones []*zone
	netem bool
}

// newCutter picks the cut's mechanism and says which in the report.
func (e *Env) newCutter(zs []*zone) (*cutter, error) {
	c := &cutter{zones: zs}
	switch err := zs[0].store.Supports("netem"); {
	case err == nil:
		c.netem = true
		e.note("cut: tc netem loss 100%% on both ends of each holder's store veth")
	case errors.Is(err, netns.ErrNoQdisc):
		e.note("cut: the host end of each holder's store veth taken down (ip link set down): this kernel has no sch_netem (%v)", err)
	default:
		return nil, err
	}
	return c, nil
}

// cut partitions every zone from the store.
func (c *cutter) cut() error {
	var errs []error
	for _, z := range c.zones {
		if c.netem {
			errs = append(errs, z.store.Impair("netem", "loss", "100%"))
		} else {
			errs = append(errs, z.store.Down())
		}
	}
	return errors.Join(errs...)
}

// heal ends the partition.
func (c *cutter) heal() error {
	var errs []error
	for _, z := range c.zones {
		if c.netem {
			errs = append(errs, z.store.Clear())
		} else {
			errs = append(errs, z.store.Up())
		}
	}
	return errors.Join(errs...)
}

// fencedTimes polls every service in ss at once and returns when each
// stopped issuing (its /healthz answering anything but 200).
func (e *Env) fencedTimes(ss []*service, timeout time.Duration) ([]time.Time, error) {
	out := make([]time.Time, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { out[i], errs[i] = e.waitFenced(s, timeout) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// renewedSince waits until every service in ss reports an acknowledged
// renewal sent after since (snowfence_lease_last_renewal_timestamp_seconds)
// and returns when the last one did.
func (e *Env) renewedSince(ss []*service, since time.Time, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	var last time.Time
	for _, s := range ss {
		for {
			v, err := s.metric(ctx, "snowfence_lease_last_renewal_timestamp_seconds")
			if err == nil && v > float64(since.UnixNano())/1e9 {
				last = time.Now()
				break
			}
			if err := pause(ctx, 5*time.Millisecond); err != nil {
				return time.Time{}, fmt.Errorf("%s: no renewal acknowledged after %v", s.name, timeout)
			}
		}
	}
	return last, nil
}

// cutLong (8a) cuts the zones' holders off from the store for longer than
// the self-fence while callers still reach them: each must fence itself
// within the self-fence of the cut, refuse while cut, and issue again
// once the link is back. The long mode keeps the cut past the lease too:
// the holders lose their numbers and claim again.
func cutLong(e *Env) error {
	if !e.serves() {
		return cutLongLibraries(e) // scenarios_kubernetes.go
	}
	t, err := e.drawTimings(netBox)
	if err != nil {
		return err
	}
	w, err := e.startNetWorld()
	if err != nil {
		return err
	}
	c, err := e.newCutter(w.zones)
	if err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	svcBefore, libBefore := w.refusals()
	hostBefore := w.host[0].ok.Load() + w.host[1].ok.Load()
	down := scale(e, t.SelfFence+2*t.RenewEvery, 4*t.LeaseFor)
	at := time.Now()
	if err := c.cut(); err != nil {
		return err
	}
	e.logf("cut the zones' store links for %v", down)
	// The last acknowledged renewal was sent before the cut: each holder
	// is past its self-fence at most S after it.
	fenced, err := e.fencedTimes(w.cut, t.SelfFence+time.Second)
	if err != nil {
		e.check("every cut service fenced itself within the self-fence (+1 s) of the cut", false, "%v", err)
	} else {
		var worst time.Duration
		for i, f := range fenced {
			d := f.Sub(at)
			worst = max(worst, d)
			e.note("%s fenced itself %v after the cut; callers still reached it (/healthz answered)", w.cut[i].name, d.Round(time.Millisecond))
		}
		e.check("every cut service fenced itself within the self-fence of the cut", worst <= t.SelfFence+250*time.Millisecond,
			"the last %v after the cut (self-fence %v; 250 ms for polling)", worst.Round(time.Millisecond), t.SelfFence)
	}
	if err := e.wait(down - time.Since(at)); err != nil {
		return err
	}
	e.check("the host namespace's services kept issuing through the cut", w.host[0].ok.Load()+w.host[1].ok.Load() > hostBefore,
		"%d requests answered", w.host[0].ok.Load()+w.host[1].ok.Load()-hostBefore)
	libAtHeal := w.libIssued(e)
	if err := c.heal(); err != nil {
		return err
	}
	back := time.Now()
	e.logf("healed after %v", back.Sub(at).Round(time.Millisecond))
	last, err := e.waitAllIssuing(w.cut, 60*time.Second)
	if err != nil {
		return err
	}
	libBack, err := w.waitLibIssuing(e, libAtHeal, 60*time.Second)
	if err != nil {
		return err
	}
	e.note("after the link came back: services issuing again in %v, the library holder in %v", last.Sub(back).Round(time.Millisecond), libBack.Sub(back).Round(time.Millisecond))
	if libBack.After(last) {
		last = libBack
	}
	e.recovered(last.Sub(back), "every cut holder issuing again after the link came back")
	svc, lib := w.refusals()
	e.check("the cut holders refused while fenced", svc > svcBefore && lib > libBefore, "%d refused requests, %d refused library calls", svc-svcBefore, lib-libBefore)
	return e.wait(2 * t.RenewEvery)
}

// shortCut is the longest cut after which no holder may refuse, from the
// timings: the last acknowledged renewal is at most a renewal period R
// old when the cut starts; after a cut of d, a segment the cut dropped is
// sent again at most about d + 200 ms after the link is back (TCP's
// retransmission timeout doubles from 200 ms), a fresh attempt starts
// within R/4, and half a second covers round trips and the store's work.
// So R + 2d + 200 ms + R/4 + 500 ms must stay below the self-fence S:
// strictly, hence the nanosecond off before rounding down (timings on a
// 100 ms grid would otherwise meet the bound exactly).
func shortCut(S, R time.Duration) time.Duration {
	d := (S - R - R/4 - 200*time.Millisecond - 500*time.Millisecond) / 2
	return (d - 1).Truncate(100 * time.Millisecond)
}

// cutShort (8b) cuts the zones' holders off for less than the self-fence,
// by the bound of shortCut: no holder may refuse, and each renews again.
// The long mode repeats the cut.
func cutShort(e *Env) error {
	t, err := e.drawTimings(netBox)
	if err != nil {
		return err
	}
	w, err := e.startNetWorld()
	if err != nil {
		return err
	}
	c, err := e.newCutter(w.zones)
	if err != nil {
		return err
	}
	d := shortCut(t.SelfFence, t.RenewEvery)
	e.note("cut for %v: R + 2d + 200 ms (TCP's first retransmission timeout) + R/4 + 500 ms < S = %v, so no refusal is expected", d, t.SelfFence)
	if err := e.wait(scale(e, 2*time.Second, 10*time.Second)); err != nil {
		return err
	}
	rounds := scale(e, 1, 10)
	var worst time.Duration
	for r := range rounds {
		svcBefore, libBefore := w.refusals()
		at := time.Now()
		if err := c.cut(); err != nil {
			return err
		}
		if err := e.wait(d); err != nil {
			return err
		}
		if err := c.heal(); err != nil {
			return err
		}
		back := time.Now()
		renewed, err := e.renewedSince(w.cut, at, 30*time.Second)
		if err != nil {
			return err
		}
		worst = max(worst, renewed.Sub(back))
		// Past S after the cut began, a refusal the cut caused would have
		// happened.
		if err := e.wait(t.SelfFence + 250*time.Millisecond - time.Since(at)); err != nil && e.ctx.Err() != nil {
			return err
		}
		svc, lib := w.refusals()
		e.check(fmt.Sprintf("cut %d of %d: no refusal by the cut holders", r+1, rounds), svc == svcBefore && lib == libBefore,
			"%d refused requests, %d refused library calls; a renewal sent after the cut acknowledged %v after the link came back",
			svc-svcBefore, lib-libBefore, renewed.Sub(back).Round(time.Millisecond))
		if err := e.wait(2 * t.RenewEvery); err != nil {
			return err
		}
	}
	e.recovered(worst, "a renewal sent after the cut began acknowledged, after the link came back (services)")
	return nil
}

// fenceMargin is how much of the self-fence a renewal gap may fall short
// of and still explain a refusal: the metric's timestamps are the
// renewals' send times, rounded to the millisecond.
const fenceMargin = 50 * time.Millisecond

// durSeconds converts a metric's seconds to a duration.
func durSeconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
