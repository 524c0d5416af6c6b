package chaos

import (
	"net/http"
	"strings"
	"time"
)

// clockStepUnderLoad replays an NTP correction on one node of a busy
// fleet: 32 generators (24 services, 2 library holders × 4) at a combined
// 180,000 IDs/s, and node 5's clock steps back 280 ms. A generator that
// trusted its clock would mint the last 280 ms of timestamps again with
// sequences restarting at 0; node 5 must refuse until its clock has passed
// the last timestamp it used, and callers must retry on other nodes.
func clockStepUnderLoad(e *Env) error {
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	// 24 services and 2 × 4 library generators at the rates below are the
	// story; their ranges leave spares.
	nSvc, nLib := e.fixedCount("services", 24), e.fixedCount("library holders (4 generators each)", 2)
	svcM, libM := e.machines("services", nSvc+4, 64), e.machines("library holders", 4*nLib+2, 64)
	svcs, err := e.startServices(nSvc, serviceConfig{machines: svcM}.timed(t))
	if err != nil {
		return err
	}
	var libs []*library
	for range nLib {
		l, err := e.addLibrary(libraryConfig{machines: libM, generators: 4, rate: 30000 / 8, batch: 100}.timed(t))
		if err != nil {
			return err
		}
		libs = append(libs, l)
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	load := e.startLoad(svcs, loadConfig{callers: 16, rate: 150000, count: 100})
	if err := e.wait(scale(e, 4*time.Second, 120*time.Second)); err != nil {
		return err
	}
	node5 := svcs[5]
	if _, err := e.probe(node5, 1); err != nil {
		return err
	}
	refusedBefore := node5.refused.Load()
	if err := node5.step(e.ctx, -280*time.Millisecond); err != nil {
		return err
	}
	stepped := time.Now()
	res, err := e.probe(node5, 1)
	if err != nil {
		return err
	}
	e.check("node 5 refuses after the step", res.status == http.StatusServiceUnavailable && res.code == "clock_backwards",
		"next request answered %d %s", res.status, res.code)
	status, body := e.healthz(node5)
	e.check("node 5 reports unhealthy", status == http.StatusServiceUnavailable && strings.Contains(body, "backwards"),
		"/healthz %d %.160s", status, body)
	back, err := e.waitIssuing(node5, 10*time.Second)
	if err != nil {
		return err
	}
	took := back.Sub(stepped)
	e.recovered(took, "node 5 issuing again")
	e.check("node 5 refused until its clock passed its last timestamp", took >= 250*time.Millisecond,
		"healthy again %v after a 280 ms step back", took.Round(time.Millisecond))
	if err := e.wait(scale(e, 4*time.Second, 120*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.check("callers retried on other nodes", node5.refused.Load() > refusedBefore && load.lost.Load() == 0,
		"callers met %d refusals on node 5 and lost %d requests", node5.refused.Load()-refusedBefore, load.lost.Load())
	e.note("target 180,000 IDs/s: 150,000 through 16 callers to 24 services (batches of 100) + 8 library generators × 3,750")
	return nil
}

// smallStepsBack steps worker 17's clock back twice: 40 ms, longer than a
// generator waits out (snowfence.Config.MaxBackwardWait), is refused until
// the clock is back past the last timestamp; 3 ms is waited out, and no
// caller sees a refusal.
func smallStepsBack(e *Env) error {
	tm, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	var svcs []*service
	for _, m := range []string{"16-16", "17-17", "18-18", "19-19"} { // worker 17 and its neighbours: the story
		s, err := e.addService(serviceConfig{machines: e.fixedMachines("worker", m)}.timed(tm))
		if err != nil {
			return err
		}
		svcs = append(svcs, s)
	}
	if err := e.waitServices(svcs, 60*time.Second); err != nil {
		return err
	}
	w17 := svcs[1]
	e.check("worker 17 holds machine number 17", w17.machine.Load() == 17, "machine %d", w17.machine.Load())
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}

	// 40 ms: refused until the clock is back past the last timestamp.
	if _, err := e.probe(w17, 1); err != nil {
		return err
	}
	if err := w17.step(e.ctx, -40*time.Millisecond); err != nil {
		return err
	}
	stepped := time.Now()
	res, err := e.probe(w17, 1)
	if err != nil {
		return err
	}
	e.check("40 ms step back refused", res.status == http.StatusServiceUnavailable && res.code == "clock_backwards",
		"next request answered %d %s", res.status, res.code)
	back, err := e.waitIssuing(w17, 10*time.Second)
	if err != nil {
		return err
	}
	e.recovered(back.Sub(stepped), "worker 17 issuing again after 40 ms back")
	if err := e.wait(time.Second); err != nil {
		return err
	}

	// 3 ms: waited out, nothing refused.
	refusedBefore := w17.refused.Load()
	first, err := e.probe(w17, 1)
	if err != nil {
		return err
	}
	if err := w17.step(e.ctx, -3*time.Millisecond); err != nil {
		return err
	}
	t := time.Now()
	res, err = e.probe(w17, 1)
	if err != nil {
		return err
	}
	took := time.Since(t)
	e.check("3 ms step back waited out", res.status == http.StatusOK && len(first.ids) == 1 && len(res.ids) == 1 && res.ids[0] > first.ids[0],
		"next request answered %d in %v", res.status, took.Round(10*time.Microsecond))
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.check("no caller refused after the 3 ms step", w17.refused.Load() == refusedBefore,
		"%d refusals on worker 17", w17.refused.Load()-refusedBefore)
	return nil
}

// forwardJump moves one node's clock 10 minutes ahead.
func forwardJump(e *Env) error {
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	n := e.count("services", 3, 6)
	svcs, err := e.startServices(n, serviceConfig{machines: e.machines("services", n+1, 64)}.timed(t))
	if err != nil {
		return err
	}
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}
	jumped := svcs[2]
	const metric = "snowfence_clock_forward_jumps_total"
	before, err := jumped.metric(e.ctx, metric)
	if err != nil {
		return err
	}
	if err := jumped.step(e.ctx, 10*time.Minute); err != nil {
		return err
	}
	stepped := time.Now()
	res, err := e.probe(jumped, 1)
	if err != nil {
		return err
	}
	e.note("first request after the jump: %d %s", res.status, res.code)
	back, err := e.waitIssuing(jumped, 30*time.Second)
	if err != nil {
		return err
	}
	e.recovered(back.Sub(stepped), "the jumped node issuing again")
	res, err = e.probe(jumped, 1)
	if err != nil {
		return err
	}
	if res.status == http.StatusOK {
		ahead := e.col.layout.TimeOf(idOf(res.ids[0])).Sub(time.Now())
		e.check("its IDs carry the jumped clock", ahead > 9*time.Minute, "an ID minted now is %v ahead of true time", ahead.Round(time.Second))
	} else {
		e.check("its IDs carry the jumped clock", false, "probe refused: %d %s", res.status, res.code)
	}
	after, err := jumped.metric(e.ctx, metric)
	if err != nil {
		return err
	}
	e.check("forward jump alarmed (metric)", after >= before+1, "%s %v → %v", metric, before, after)
	status, body := e.healthz(jumped)
	e.check("forward jump alarmed (/healthz warning)", strings.Contains(body, "jumped forward"), "/healthz %d %.200s", status, body)
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	return nil
}

// idOf is the snowfence ID of a raw value.
func idOf(v int64) snowfenceID { return snowfenceID(v) }
