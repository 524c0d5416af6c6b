package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// leapSecond (3b) replays a positive leap second on two kinds of holder,
// services and library holders both. Their clocks are first set ahead so
// that they read 00:00:00 UTC a few seconds into the scenario (a forward
// step at the start, waited out); then
//
//   - the leap holders' clocks repeat a second at 23:59:60, as the kernel
//     inserts one without smearing: a step back of 1 s as they cross
//     midnight. Each must refuse until its clock passes its last
//     timestamp again, about a second, and then issue;
//   - the smeared holders' clocks lose the second gradually, centred on
//     the midnight, as chrony (at its default largest slew, 83,333 ppm: a
//     second in 12 s) and cloud time services (a second over 24 h) do.
//     They must never refuse.
//
// Neither may repeat an ID, nor issue one below its lane's last.
func leapSecond(e *Env) error {
	over := scale(e, 12*time.Second, 5*time.Minute)
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	// One leaping and one smeared service and library holder are the
	// story; how many services run beside them, and how many generators
	// each library holder has, are drawn.
	nSvc, gens := e.count("services", 3, 6), e.count("generators per library holder", 1, 3)
	e.fixedCount("library holders", 2)
	svcs, err := e.startServices(nSvc, serviceConfig{machines: e.machines("services", nSvc+1, 64)}.timed(t))
	if err != nil {
		return err
	}
	leapSvc, smearSvc := svcs[0], svcs[1]
	var libs [2]*library
	libM := e.machines("library holders", 2*gens+1, 64)
	for i := range libs {
		if libs[i], err = e.addLibrary(libraryConfig{machines: libM, generators: gens, rate: 5000, batch: 50}.timed(t)); err != nil {
			return err
		}
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	leapLib, smearLib := libs[0], libs[1]
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(time.Second); err != nil {
		return err
	}

	// Set the four clocks to read midnight at the instant at. The step
	// forward costs refusals until each keeper raises its mark: well
	// under a second on etcd, up to about 9 s on the tables; the settle
	// leaves room for it before the smear begins.
	settle := scale(e, 4*time.Second, 10*time.Second)
	if e.opts.Store != StoreEtcd {
		settle += 10 * time.Second
	}
	at := time.Now().Add(settle + over/2)
	midnight := at.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	ahead := midnight.Sub(at).Truncate(time.Millisecond)
	for _, s := range []*service{leapSvc, smearSvc} {
		if err := s.step(e.ctx, ahead); err != nil {
			return err
		}
	}
	for _, l := range libs {
		if err := l.step(e.ctx, ahead); err != nil {
			return err
		}
	}
	set := time.Now()
	last, err := e.waitAllIssuing([]*service{leapSvc, smearSvc}, 30*time.Second)
	if err != nil {
		return err
	}
	e.note("clocks set %v ahead (midnight UTC of %s in %v of true time); the step forward cost %v of refusals",
		ahead.Round(time.Second), midnight.Format("2006-01-02"), time.Until(at).Round(time.Millisecond), last.Sub(set).Round(time.Millisecond))

	// The smear: -1 s over `over`, centred on the midnight unless the
	// step forward took longer than the settle (then it begins now).
	if err := pause(e.ctx, time.Until(at.Add(-over/2))); err != nil {
		return err
	}
	smearEnd := time.Now().Add(over)
	smearBefore, smearLibBefore := smearSvc.refused.Load(), smearLib.refusals()
	if err := smearSvc.setClock(e.ctx, fmt.Sprintf(`{"slew_ms":-1000,"over_ms":%d}`, over.Milliseconds())); err != nil {
		return err
	}
	if err := smearLib.command(e.ctx, fmt.Sprintf("slew -1000 %d", over.Milliseconds())); err != nil {
		return err
	}
	e.logf("smear of 1 s over %v begun", over)

	// The leap: 23:59:60 repeats 23:59:59.
	if err := pause(e.ctx, time.Until(at)); err != nil {
		return err
	}
	leapLibBefore := leapLib.refusals()
	if _, err := e.probe(leapSvc, 1); err != nil {
		return err
	}
	if err := leapSvc.step(e.ctx, -time.Second); err != nil {
		return err
	}
	stepped := time.Now()
	if err := leapLib.step(e.ctx, -time.Second); err != nil {
		return err
	}
	e.note("the leap holders stepped back 1 s %v after their clocks crossed midnight", stepped.Sub(at).Round(100*time.Microsecond))
	res, err := e.probe(leapSvc, 1)
	if err != nil {
		return err
	}
	e.check("the leap service refuses at 23:59:60", res.status == http.StatusServiceUnavailable && res.code == "clock_backwards",
		"next request answered %d %s", res.status, res.code)
	back, err := e.waitIssuing(leapSvc, 10*time.Second)
	if err != nil {
		return err
	}
	took := back.Sub(stepped)
	e.recovered(took, "the leap service issuing again after 23:59:60")
	e.check("the leap service refused for about the repeated second", took >= 900*time.Millisecond && took < 3*time.Second,
		"issuing again %v after the step back", took.Round(time.Millisecond))

	// The smear's end.
	if err := pause(e.ctx, time.Until(smearEnd.Add(time.Second))); err != nil {
		return err
	}
	off, err := clockOffset(e, smearSvc)
	if err != nil {
		return err
	}
	e.check("the smeared service's clock lost the second", off == ahead-time.Second, "offset %v, want %v", off, ahead-time.Second)
	if res, err = e.probe(smearSvc, 1); err != nil {
		return err
	}
	if res.status == http.StatusOK {
		lag := ahead - time.Second - e.col.layout.TimeOf(idOf(res.ids[0])).Sub(time.Now())
		e.check("the smeared service's IDs carry the smeared clock", lag.Abs() < 250*time.Millisecond,
			"an ID minted now is %v off the smeared clock", lag.Round(time.Millisecond))
	} else {
		e.check("the smeared service's IDs carry the smeared clock", false, "probe refused: %d %s", res.status, res.code)
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.check("the smeared holders never refused", smearSvc.refused.Load() == smearBefore && smearLib.refusals() == smearLibBefore,
		"%d refused requests on the smeared service, %d refused calls in the smeared library", smearSvc.refused.Load()-smearBefore, smearLib.refusals()-smearLibBefore)
	e.check("the leap library refused at 23:59:60", leapLib.refusals() > leapLibBefore, "%d refused calls", leapLib.refusals()-leapLibBefore)
	e.note("smear: 1 s over %v (%.0f ppm slow); leap service refused %v", over, 1e6*float64(time.Second)/float64(over), took.Round(time.Millisecond))
	return nil
}

// clockOffset reads s's test clock offset.
func clockOffset(e *Env, s *service) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	status, body, err := s.get(ctx, "/test/clock-offset")
	if err != nil {
		return 0, err
	}
	var v struct {
		OffsetMs int64 `json:"offset_ms"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
		return 0, fmt.Errorf("%s: clock offset: %d %s", s.name, status, body)
	}
	return time.Duration(v.OffsetMs) * time.Millisecond, nil
}
