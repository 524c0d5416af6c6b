package chaos

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A scenario is one named, repeatable failure story.
type scenario struct {
	id, name string
	run      func(*Env) error
}

// scenarios lists the suite in order.
func scenarios() []scenario {
	return []scenario{
		{"1", "node 5's clock steps back 280 ms under 180,000 IDs/s on 32 generators", clockStepUnderLoad},
		{"2", "worker 17 steps back 40 ms (refused), then 3 ms (waited out)", smallStepsBack},
		{"3", "a forward jump of 10 minutes on one node", forwardJump},
		{"4", "a holder frozen (SIGSTOP) past its lease while another takes its number", frozenHolder},
		{"5a", "etcd: the leader killed (SIGKILL)", func(e *Env) error { return etcdFault(e, "leader") }},
		{"5b", "etcd: quorum lost for 3 s", func(e *Env) error { return etcdFault(e, "quorum3") }},
		{"5c", "etcd: quorum lost for 30 s", func(e *Env) error { return etcdFault(e, "quorum30") }},
		{"5d", "etcd: the cluster restored from an old snapshot", func(e *Env) error { return etcdFault(e, "restore") }},
		{"5e", "etcd: one member's data rolled back to an old copy", func(e *Env) error { return etcdFault(e, "rollback") }},
		{"6", "crash loops: holders SIGKILLed and restarted 100 times", crashLoops},
		{"7", "bursts past 4,096 IDs in one millisecond on one holder", bursts},
		{"8", "a holder cut off from etcd while it still serves callers", cutOff},
	}
}

// Lease timings for scenarios that wait for a lease to expire: the
// production ratios (TTL : renewal : self-fence = 10 : 2 : 5) shortened.
const (
	fastTTL       = 3 * time.Second
	fastRenew     = 500 * time.Millisecond
	fastSelfFence = 1500 * time.Millisecond
)

// clockStepUnderLoad replays an NTP correction on one node of a busy
// fleet: 32 generators (24 services, 2 library holders × 4) at a combined
// 180,000 IDs/s, and node 5's clock steps back 280 ms. A generator that
// trusted its clock would mint the last 280 ms of timestamps again with
// sequences restarting at 0; node 5 must refuse until its clock has passed
// the last timestamp it used, and callers must retry on other nodes.
func clockStepUnderLoad(e *Env) error {
	svcs, err := e.startServices(24, serviceConfig{machines: "0-63"})
	if err != nil {
		return err
	}
	var libs []*library
	for range 2 {
		l, err := e.addLibrary(libraryConfig{machines: "64-127", generators: 4, rate: 30000 / 8, batch: 100})
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
	var svcs []*service
	for _, m := range []string{"16-16", "17-17", "18-18", "19-19"} {
		s, err := e.addService(serviceConfig{machines: m})
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
	svcs, err := e.startServices(4, serviceConfig{machines: "0-63"})
	if err != nil {
		return err
	}
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}
	n := svcs[2]
	const metric = "snowfence_clock_forward_jumps_total"
	before, err := n.metric(e.ctx, metric)
	if err != nil {
		return err
	}
	if err := n.step(e.ctx, 10*time.Minute); err != nil {
		return err
	}
	stepped := time.Now()
	res, err := e.probe(n, 1)
	if err != nil {
		return err
	}
	e.note("first request after the jump: %d %s", res.status, res.code)
	back, err := e.waitIssuing(n, 30*time.Second)
	if err != nil {
		return err
	}
	e.recovered(back.Sub(stepped), "the jumped node issuing again")
	res, err = e.probe(n, 1)
	if err != nil {
		return err
	}
	if res.status == http.StatusOK {
		ahead := e.col.layout.TimeOf(idOf(res.ids[0])).Sub(time.Now())
		e.check("its IDs carry the jumped clock", ahead > 9*time.Minute, "an ID minted now is %v ahead of true time", ahead.Round(time.Second))
	} else {
		e.check("its IDs carry the jumped clock", false, "probe refused: %d %s", res.status, res.code)
	}
	after, err := n.metric(e.ctx, metric)
	if err != nil {
		return err
	}
	e.check("forward jump alarmed (metric)", after >= before+1, "%s %v → %v", metric, before, after)
	status, body := e.healthz(n)
	e.check("forward jump alarmed (/healthz warning)", strings.Contains(body, "jumped forward"), "/healthz %d %.200s", status, body)
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	return nil
}

// frozenHolder freezes holders past their lease while another claims the
// number, then wakes them. With Options.NoFence only the library pair
// runs, and the suite must find the duplicates that follow.
func frozenHolder(e *Env) error {
	lc := libraryConfig{machines: "40-40", generators: 1, rate: 20000, batch: 50,
		leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence, noFence: e.opts.NoFence}
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
	if !e.opts.NoFence {
		sc := serviceConfig{machines: "41-41", leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence}
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
	if err := a.proc().signal(sigStop); err != nil {
		return err
	}
	if s1 != nil {
		if err := s1.proc().signal(sigStop); err != nil {
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
	if err := e.wait(fastTTL + 2*time.Second - time.Since(frozen)); err != nil && e.ctx.Err() != nil {
		return err
	}
	e.logf("waking them after %v", time.Since(frozen).Round(time.Millisecond))
	aRefused := a.refusals()
	a.proc().signal(sigCont)
	if s1 != nil {
		s1.proc().signal(sigCont)
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
	_, s1Max, _ := e.col.span(int32(s1.idx))
	s2Min, _, s2OK := e.col.span(int32(s2.idx))
	e.check("the woken service refused", s1.refused.Load() > 0, "%d refusals", s1.refused.Load())
	e.check("its IDs all precede the new service's", s2OK && s1Max < s2Min, "last of frozen %d, first of new %d", s1Max, s2Min)
	return nil
}

// etcdFault runs services and library holders while etcd suffers fault.
func etcdFault(e *Env, fault string) error {
	svcs, err := e.startServices(6, serviceConfig{machines: "0-63"})
	if err != nil {
		return err
	}
	lib, err := e.addLibrary(libraryConfig{machines: "64-127", generators: 2, rate: 5000, batch: 50})
	if err != nil {
		return err
	}
	if err := lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	load := e.startLoad(svcs, loadConfig{callers: 6, rate: 30000, count: 50})
	snap := e.dir + "/old.snapshot"
	if fault == "restore" {
		if err := e.cluster.Snapshot(e.ctx, snap); err != nil {
			return err
		}
		e.logf("snapshot taken")
	}
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	refusedBefore := load.refused.Load()
	switch fault {
	case "leader":
		leader, err := e.cluster.Leader(e.ctx)
		if err != nil {
			return err
		}
		if err := e.cluster.Kill(leader); err != nil {
			return err
		}
		killed := time.Now()
		if err := e.cluster.WaitWritable(e.ctx); err != nil {
			return err
		}
		e.recovered(time.Since(killed), "etcd writable again after the leader's SIGKILL")
		if err := e.wait(5 * time.Second); err != nil {
			return err
		}
		if err := e.cluster.Restart(e.ctx, leader); err != nil {
			return err
		}
		e.check("no refusal while etcd elected a new leader", load.refused.Load() == refusedBefore,
			"%d refusals", load.refused.Load()-refusedBefore)
	case "quorum3", "quorum30":
		d := 3 * time.Second
		if fault == "quorum30" {
			d = 30 * time.Second
		}
		leader, err := e.cluster.Leader(e.ctx)
		if err != nil {
			return err
		}
		paused := []int{(leader + 1) % 3, (leader + 2) % 3}
		for _, i := range paused {
			if err := e.cluster.Pause(i); err != nil {
				return err
			}
		}
		lost := time.Now()
		e.logf("quorum lost: members %v stopped", paused)
		if fault == "quorum30" {
			if err := e.wait(10 * time.Second); err != nil {
				return err
			}
			var issuing []string
			for _, s := range svcs {
				if status, _ := e.healthz(s); status == http.StatusOK {
					issuing = append(issuing, s.name)
				}
			}
			e.check("every service fenced itself 10 s into the outage", len(issuing) == 0, "still issuing: %v", issuing)
		}
		if err := e.wait(d - time.Since(lost)); err != nil && e.ctx.Err() != nil {
			return err
		}
		for _, i := range paused {
			if err := e.cluster.Resume(i); err != nil {
				return err
			}
		}
		back := time.Now()
		if err := e.cluster.WaitWritable(e.ctx); err != nil {
			return err
		}
		last, err := e.waitAllIssuing(svcs, 60*time.Second)
		if err != nil {
			return err
		}
		e.note("every service issuing again %v after quorum returned", last.Sub(back).Round(time.Millisecond))
		e.note("quorum lost for %v", back.Sub(lost).Round(time.Millisecond))
		if fault == "quorum30" {
			e.check("services refused during the outage", load.refused.Load() > refusedBefore, "%d refusals", load.refused.Load()-refusedBefore)
		}
	case "rollback":
		if err := rollbackMember(e, load.refused.Load); err != nil {
			return err
		}
	case "restore":
		if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
			return err
		}
		t := time.Now()
		if err := e.cluster.RestoreAll(e.ctx, snap, restoreNewToken); err != nil {
			return err
		}
		e.logf("restored from the snapshot in %v", time.Since(t).Round(time.Millisecond))
		// The holders find the restore at their next renewal and refuse
		// until their new leases start, the store's restore window ahead
		// (etcdstore.MaxRestoreWindow).
		if err := e.wait(15 * time.Second); err != nil {
			return err
		}
		e.check("the holders noticed the restore and refused", load.refused.Load() > refusedBefore && lib.refusals() > 0,
			"%d refused requests, %d refused library calls", load.refused.Load()-refusedBefore, lib.refusals())
		if _, err := e.waitAllIssuing(svcs, 60*time.Second); err != nil {
			return err
		}
	}
	if err := e.wait(scale(e, 5*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.outageRecovery(svcs)
	return nil
}

// crashLoops kills a random holder and starts it again, 100 times.
func crashLoops(e *Env) error {
	sc := serviceConfig{machines: "0-11", leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence, supervise: true}
	svcs, err := e.startServices(4, sc)
	if err != nil {
		return err
	}
	var libs []*library
	for range 2 {
		l, err := e.addLibrary(libraryConfig{machines: "12-23", generators: 2, rate: 5000, batch: 50,
			leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence})
		if err != nil {
			return err
		}
		libs = append(libs, l)
	}
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	every := scale(e, 250*time.Millisecond, 1500*time.Millisecond)
	const kills = 100
	var restarts sync.WaitGroup
	var slowest struct {
		sync.Mutex
		d                time.Duration
		killed, returned int // service kills, and restarts that served
	}
	for k := range kills {
		victim := e.rng.IntN(len(svcs) + len(libs))
		if victim < len(svcs) {
			s := svcs[victim]
			s.kill()
			if err := s.start(); err != nil {
				return err
			}
			slowest.Lock()
			slowest.killed++
			slowest.Unlock()
			restarts.Go(func() {
				t := time.Now()
				if s.waitServing(e.ctx, 60*time.Second) == nil {
					slowest.Lock()
					slowest.d = max(slowest.d, time.Since(t))
					slowest.returned++
					slowest.Unlock()
				}
			})
		} else {
			l := libs[victim-len(svcs)]
			l.proc().kill()
			if err := l.start(); err != nil {
				return err
			}
		}
		if k%20 == 19 {
			e.logf("%d kills", k+1)
		}
		if err := e.wait(every); err != nil {
			return err
		}
	}
	if err := e.waitServices(svcs, 60*time.Second); err != nil {
		return err
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	restarts.Wait()
	e.recovered(slowest.d, "the slowest restarted service to serve again")
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	load.stop()
	e.check("every SIGKILLed service served again", slowest.returned == slowest.killed,
		"%d of %d service restarts served within 60 s (%d kills in all, one every %v; the library holders' restarts are checked by waitReady)",
		slowest.returned, slowest.killed, kills, every)
	return nil
}

// bursts asks one service for far more than 4,096 IDs per millisecond and
// runs a library generator flat out.
func bursts(e *Env) error {
	s, err := e.addService(serviceConfig{machines: "0-0"})
	if err != nil {
		return err
	}
	if err := s.waitServing(e.ctx, 60*time.Second); err != nil {
		return err
	}
	lib, err := e.addLibrary(libraryConfig{machines: "1-1", generators: 1, rate: 0, batch: 1000})
	if err != nil {
		return err
	}
	if err := lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	load := e.startLoad([]*service{s}, loadConfig{callers: 8, rate: 0, count: 1000, checkAhead: true})
	if err := e.wait(scale(e, 5*time.Second, 150*time.Second)); err != nil {
		return err
	}
	load.stop()
	for _, m := range []struct {
		name    string
		machine int
	}{{"service", 0}, {"library generator", 1}} {
		ticks, most := e.col.perTick(m.machine)
		e.check(m.name+" exhausted its sequence and spilled into the next millisecond", most == 4096,
			"%d milliseconds used, at most %d IDs in one", ticks, most)
	}
	return nil
}

// idOf is the snowfence ID of a raw value.
func idOf(v int64) snowfenceID { return snowfenceID(v) }

// rollbackMember copies a follower's data while it is stopped, lets the
// cluster move on, then puts the old copy back and restarts the member: a
// VM snapshot of one member rolled back. etcd either brings the member up
// to date or stops it (its raft log is behind what it acknowledged); the
// other two keep quorum, so the holders must not notice.
func rollbackMember(e *Env, refused func() int64) error {
	leader, err := e.cluster.Leader(e.ctx)
	if err != nil {
		return err
	}
	m := (leader + 1) % e.cluster.Size()
	dir := filepath.Join(e.dir, "etcd", fmt.Sprintf("m%d", m))
	old := dir + ".old"
	before := refused()
	if err := e.cluster.Kill(m); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", dir, old).CombinedOutput(); err != nil {
		return fmt.Errorf("copy m%d's data: %v: %s", m, err, out)
	}
	if err := e.cluster.Restart(e.ctx, m); err != nil {
		return err
	}
	e.logf("copied member m%d's data; the cluster moves on", m)
	if err := e.wait(scale(e, 5*time.Second, 30*time.Second)); err != nil {
		return err
	}
	if err := e.cluster.Kill(m); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(old, dir); err != nil {
		return err
	}
	t := time.Now()
	if err := e.cluster.Restart(e.ctx, m); err != nil {
		e.note("member m%d on its rolled-back data did not rejoin: %s", m, firstLine(err.Error()))
	} else {
		e.note("member m%d rejoined on its rolled-back data in %v and caught up", m, time.Since(t).Round(time.Millisecond))
	}
	if err := e.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	if err := e.wait(3 * time.Second); err != nil {
		return err
	}
	e.check("the other two members kept the holders going", refused() == before, "%d refusals", refused()-before)
	return nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
