package chaos

import "time"

// frozenHolder freezes holders past their lease while another claims the
// number, then wakes them. With Options.NoFence only the library pair
// runs, and the suite must find the duplicates that follow; on a store
// serve does not lease from (Env.serves: Kubernetes) too, with the fence.
func frozenHolder(e *Env) error {
	// Two library holders, then two services, each pair on one number:
	// the story. Which number, and the timings, are drawn.
	t, err := e.drawTimings(fastBox)
	if err != nil {
		return err
	}
	lc := libraryConfig{machines: e.machines("library pair", 1, 1), generators: 1, rate: 20000, batch: 50, noFence: e.opts.NoFence}.timed(t)
	a, err := e.addLibrary(lc)
	if err != nil {
		return err
	}
	if err := a.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	b, err := e.addLibrary(lc) // waits for number 40
	if err != nil {
		return err
	}
	var s1, s2 *service
	var load *load
	if !e.opts.NoFence && e.serves() { // Kubernetes: the library pair alone
		sc := serviceConfig{machines: e.machines("service pair", 1, 1)}.timed(t)
		if s1, err = e.addService(sc); err != nil {
			return err
		}
		if err := s1.waitServing(e.ctx, 60*time.Second); err != nil {
			return err
		}
		sc.supervise = true // exits while 41 is taken; restarted like a systemd unit
		if s2, err = e.addService(sc); err != nil {
			return err
		}
		load = e.startLoad([]*service{s1, s2}, loadConfig{callers: 4, rate: 10000, count: 10})
	}
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}

	frozen := time.Now()
	if err := a.proc().Signal(sigStop); err != nil {
		return err
	}
	if s1 != nil {
		if err := s1.proc().Signal(sigStop); err != nil {
			return err
		}
	}
	e.logf("froze %s and the first service", a.name)
	if err := b.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	e.recovered(time.Since(frozen), "the other holder took the frozen one's number")
	if s2 != nil {
		if err := s2.waitServing(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	if err := e.wait(t.LeaseFor + 2*time.Second - time.Since(frozen)); err != nil && e.ctx.Err() != nil {
		return err
	}
	e.logf("waking them after %v", time.Since(frozen).Round(time.Millisecond))
	aRefused := a.refusals()
	a.proc().Signal(sigCont)
	if s1 != nil {
		s1.proc().Signal(sigCont)
	}
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	if load != nil {
		load.stop()
	}
	if e.opts.NoFence {
		e.note("fence disabled: the woken holder keeps minting on number 40")
		return nil
	}
	_, aMax, _ := e.col.span(a.base)
	bMin, _, bOK := e.col.span(b.base)
	e.check("the woken library holder refused", a.refusals() > aRefused, "%d refusals after waking", a.refusals()-aRefused)
	e.check("its IDs all precede the new holder's", bOK && aMax < bMin, "last of frozen %d, first of new %d", aMax, bMin)
	if s1 == nil {
		return nil
	}
	_, s1Max, _ := e.col.span(int32(s1.idx))
	s2Min, _, s2OK := e.col.span(int32(s2.idx))
	e.check("the woken service refused", s1.refused.Load() > 0, "%d refusals", s1.refused.Load())
	e.check("its IDs all precede the new service's", s2OK && s1Max < s2Min, "last of frozen %d, first of new %d", s1Max, s2Min)
	return nil
}
