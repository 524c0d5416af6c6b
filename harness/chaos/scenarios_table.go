package chaos

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// The short mode gives the holders of the table stores' own faults timings
// drawn in tableBox (config.go), so that a fault past the self-fence costs
// seconds, not minutes: leases of 7–12 s, self-fences of 4–6 s renewed
// every 10–25 % of it (they were 10 s, 1 s, 5 s), margins the draw allows;
// and every holder of the table runs with a test bound of 6 s
// (shortTableMaxSelfFence), so that a claim waits 7.6 s, not the tables'
// 4 min 40 s. The product's checks accept each draw on the store (a restore
// window of 14 s at most, far below the tables' 6 min). The long mode runs
// the same faults on the store's own timings (lease.TableTimings: 5 min,
// 5 s, 4 min 10 s, 5 s) and bound; scenarios_outage.go runs outages on
// them.

// tableFault runs services and a library holder on a lease table while
// the table's server suffers fault: "stop" (PostgreSQL: pg_ctl stop -m
// immediate; dynalite: SIGKILL) for longer than the self-fence, then a
// start on the same data; "freeze-short" and "freeze-long" (every process
// of the server SIGSTOPped) for less and for more than the self-fence;
// "restore" (PostgreSQL: back to a base backup taken mid-run; ZooKeeper:
// a cold copy of its data, zkRestore; then the runbook's raise-marks
// before the holders reach it).
func tableFault(e *Env, fault string) error {
	t := e.timings
	nSvc, gens := e.count("services", 4, 8), e.count("library generators", 1, 3)
	var sc serviceConfig
	lc := libraryConfig{machines: e.machines("library holder", gens+1, 64), generators: gens, rate: 5000, batch: 50}
	which := "the store's own"
	if e.short {
		var err error
		if t, err = e.drawTimings(tableBox); err != nil {
			return err
		}
		sc, lc = sc.timed(t), lc.timed(t)
		which = "the short mode's, drawn"
	} else {
		e.fixedTimings("holders", t, "the long mode runs the store's own timings (lease.TableTimings)")
	}
	e.note("timings (%s): lease %v, renewal every %v, self-fence %v, margin %v", which, t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin)
	sc.machines = e.machines("services", nSvc+1, 64)
	sc.supervise = fault == "restore" // serve exits while no number is free: restarted like a systemd unit
	e.cleanups = append(e.cleanups, func() { e.tables.heal(context.WithoutCancel(e.ctx)) })

	svcs, err := e.startServices(nSvc, sc)
	if err != nil {
		return err
	}
	lib, err := e.addLibrary(lc)
	if err != nil {
		return err
	}
	if err := lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	lcfg := loadConfig{callers: 6, rate: 30000, count: 50}
	if fault == "restore" {
		// The holders refuse until the raised mark, the store's restore
		// window (6 min; on ZooKeeper in the short mode, the test
		// bound's, 14.2 s) after the operator's step: no caller gives up
		// sooner.
		lcfg.deadline = 12 * time.Minute
	}
	load := e.startLoad(svcs, lcfg)
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	refusedBefore, libBefore := load.refused.Load(), lib.refusals()
	refusedSince := func() (int64, int64) {
		return load.refused.Load() - refusedBefore, lib.refusals() - libBefore
	}
	what := e.tables.what()
	switch fault {
	case "stop", "freeze-long":
		// Past the self-fence, within the lease: every holder must fence
		// itself, and issue again once the store answers.
		down := t.SelfFence + 2*t.RenewEvery
		var err error
		if fault == "stop" {
			err = e.tables.stop(e.ctx)
		} else {
			err = e.tables.freeze()
		}
		if err != nil {
			return err
		}
		at := time.Now()
		if fault == "freeze-long" {
			e.noteFrozen()
		}
		e.logf("%s %s for %v", what, map[string]string{"stop": "stopped", "freeze-long": "frozen"}[fault], down)
		// The last acknowledged renewal was sent at most a renewal period
		// before the fault: by then every holder is past its self-fence.
		if err := e.wait(t.SelfFence + t.RenewEvery + 500*time.Millisecond); err != nil {
			return err
		}
		var issuing []string
		for _, s := range svcs {
			if status, _ := e.healthz(s); status == http.StatusOK {
				issuing = append(issuing, s.name)
			}
		}
		e.check("every service fenced itself within self-fence + one renewal period", len(issuing) == 0,
			"%v into the outage, still issuing: %v", time.Since(at).Round(time.Millisecond), issuing)
		if err := e.wait(down - time.Since(at)); err != nil && e.ctx.Err() != nil {
			return err
		}
		if fault == "stop" {
			err = e.tables.start(e.ctx)
		} else {
			err = e.tables.thaw()
		}
		if err != nil {
			return err
		}
		back := time.Now()
		e.note("%s unavailable for %v", what, back.Sub(at).Round(time.Millisecond))
		last, err := e.waitAllIssuing(svcs, 60*time.Second)
		if err != nil {
			return err
		}
		e.recovered(last.Sub(back), "every service issuing again after "+what+" came back")
		e.note("every service issuing again %v after %s came back", last.Sub(back).Round(time.Millisecond), what)
		if err := e.wait(2 * t.RenewEvery); err != nil {
			return err
		}
		r, l := refusedSince()
		e.check("the holders refused during the outage", r > 0 && l > 0, "%d refused requests, %d refused library calls", r, l)
	case "freeze-short":
		// The last acknowledged renewal is at most a renewal period old
		// when the freeze starts; after it, a renewal succeeds within a
		// quarter period (the retry) plus the request timeout (half a
		// period). A freeze of self-fence − 2 periods − 1 s stays below the
		// self-fence with a second to spare: nobody may refuse.
		d := t.SelfFence - 2*t.RenewEvery - time.Second
		if err := e.tables.freeze(); err != nil {
			return err
		}
		at := time.Now()
		e.noteFrozen()
		e.logf("%s frozen for %v", what, d)
		if err := e.wait(d); err != nil {
			return err
		}
		if err := e.tables.thaw(); err != nil {
			return err
		}
		e.note("%s frozen for %v", what, time.Since(at).Round(time.Millisecond))
		if err := e.wait(2 * t.RenewEvery); err != nil {
			return err
		}
		r, l := refusedSince()
		e.check("no refusal while the store was frozen for less than the self-fence", r == 0 && l == 0,
			"%d refused requests, %d refused library calls", r, l)
	case "restore":
		restore := tableRestore
		if e.tables.zk != nil {
			restore = zkRestore // scenarios_zookeeper.go
		}
		if err := restore(e, t, sc, svcs, refusedSince); err != nil {
			return err
		}
	default:
		return fmt.Errorf("chaos: no table fault %q", fault)
	}
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.outageRecovery(svcs)
	return nil
}

// noteFrozen says how many processes the freeze stopped.
func (e *Env) noteFrozen() {
	if pg := e.tables.pg; pg != nil {
		e.note("froze %d processes: the postmaster and every backend and helper it started", pg.Frozen())
	} else if e.tables.zk != nil {
		e.note("froze the ZooKeeper server (one process, its JVM)")
	} else {
		e.note("froze dynalite (one process)")
	}
}

// tableRestore takes a base backup, lets the table move on (a holder claims
// a number the backup does not know of), crashes the cluster and puts the
// backup back: the same system identifier and timeline, so no holder can
// tell (docs/runbook.md, "A lease store was restored"). It then does what
// the runbook tells the operator to: keep the holders away (the cluster
// answers on its Unix socket only), `snowfence leases raise-marks --to
// now+<restore window>` over every number, and only then let them back
// (TCP). Every holder must refuse until the raised mark, and nothing may
// repeat.
func tableRestore(e *Env, t lease.Timings, sc serviceConfig, svcs []*service, refusedSince func() (int64, int64)) error {
	pg := e.tables.pg
	backup, err := pg.BaseBackup(e.ctx)
	if err != nil {
		return err
	}
	e.logf("base backup taken")
	ls, lateLoad, err := e.lateService(sc, 12*time.Minute)
	if err != nil {
		return err
	}
	svcs = append(svcs, ls)
	if err := pg.StopImmediate(e.ctx); err != nil {
		return err
	}
	stopped := time.Now()
	e.tables.socketOnly = true
	if err := pg.Restore(e.ctx, backup, true); err != nil {
		return err
	}
	e.logf("restored the base backup; the cluster answers on its Unix socket only")
	window := pgstore.MaxRestoreWindow + 10*time.Second
	mark, err := e.raiseMarks(window, stopped,
		[]string{"--lease-store", "postgres", "--postgres-url", pg.SocketURL(), "--postgres-table", e.table}, nil)
	if err != nil {
		return err
	}
	if err := pg.Restart(e.ctx); err != nil {
		return err
	}
	e.tables.socketOnly = false
	// raise-marks took every holder's number from it: its next renewal is
	// refused.
	return e.checkRaised(t, svcs, lateLoad, refusedSince, window, stopped, time.Now(), mark)
}
