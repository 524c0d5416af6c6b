package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/harness/chaos/netns"
	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// Kubernetes' own faults (13a–13d) are the table scenarios' stories on a
// kube-apiserver (package k8sproc): killed and started again on its etcd,
// frozen, restored from an etcd snapshot. Its leases are a table's — a
// mark judged by the claimer's clock, k8sstore.Timings = lease.TableTimings
// — so its holders take the tables' short-mode timings (tableBox) and the
// test bound with ZooKeeper's reserve (shortTableMaxSelfFence,
// shortTableMaxReserve), which k8sstore honours as zkstore does: the
// restore drill (13d) runs in the short mode.
//
// Its holders are library holders only (HolderMain on k8sstore, through
// a kubeconfig of a service account allowed get, list, create and patch
// on the scenario namespace's leases): `snowfence serve` has no
// --lease-store kubernetes yet (Env.serves), so the checks are made on
// what the holders streamed and reported, not on /healthz.

// serves says whether the store's holders may be services: `snowfence
// serve` leases from every store but Kubernetes, which the CLI does not
// know yet.
func (e *Env) serves() bool { return e.opts.Store != StoreKubernetes }

// k8sFault runs library holders on the scenario's namespace while the API
// server suffers fault: "stop" (SIGKILL) for longer than the self-fence,
// then a start on the same etcd; "freeze-short" and "freeze-long"
// (SIGSTOP) for less and for more than the self-fence; "restore" (k8sRestore).
func k8sFault(e *Env, fault string) error {
	t := e.timings
	nLib, gens := e.count("library holders", 3, 4), e.count("library generators", 1, 3)
	lc := libraryConfig{machines: e.machines("library holders", nLib*gens+1, 64), generators: gens, rate: 5000, batch: 50}
	which := "the store's own"
	if e.short {
		var err error
		if t, err = e.drawTimings(tableBox); err != nil {
			return err
		}
		lc = lc.timed(t)
		which = "the short mode's, drawn"
	} else {
		e.fixedTimings("holders", t, "the long mode runs the store's own timings (lease.TableTimings)")
	}
	e.note("timings (%s): lease %v, renewal every %v, self-fence %v, margin %v; %d library holders of %d generators, no services (the suite starts no serve on Kubernetes yet)",
		which, t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin, nLib, gens)
	e.cleanups = append(e.cleanups, func() { e.tables.heal(context.WithoutCancel(e.ctx)) })
	libs := make([]*library, nLib)
	for i := range libs {
		var err error
		if libs[i], err = e.addLibrary(lc); err != nil {
			return err
		}
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	before := libRefusals(libs)
	what := e.tables.what()
	switch fault {
	case "stop", "freeze-long":
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
		e.logf("%s %s for %v", what, map[string]string{"stop": "killed", "freeze-long": "frozen"}[fault], down)
		if err := e.wait(down); err != nil {
			return err
		}
		// The API server may answer a holder before its /readyz says
		// ready: the check below ends at the restart, not at the ready.
		restart := time.Now()
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
		// The last acknowledged renewal was sent before the fault: every
		// holder stopped issuing a self-fence after it (×1.08 for a slow
		// clock), and none could renew until the server was started again.
		quiet := at.Add(t.SelfFence*108/100 + 200*time.Millisecond)
		n := e.col.countBetween(quiet, restart)
		e.check("no holder issued past its self-fence while the API server was down", n == 0,
			"%d IDs stamped %s … %s %s", n, quiet.UTC().Format(time.TimeOnly), restart.UTC().Format(time.TimeOnly), e.col.machinesBetween(quiet, restart))
		last, err := e.waitLibsIssuing(libs, back, 60*time.Second)
		if err != nil {
			return err
		}
		e.recovered(last.Sub(back), "every library holder issuing again after "+what+" came back")
		e.note("every library holder issuing again %v after %s came back", last.Sub(back).Round(time.Millisecond), what)
		r := libRefusals(libs) - before
		e.check("the holders refused during the outage", r > 0, "%d refused library calls", r)
	case "freeze-short":
		// As the tables' 9b: below the self-fence by two renewal periods
		// and a second, nobody may refuse.
		d := t.SelfFence - 2*t.RenewEvery - time.Second
		if err := e.tables.freeze(); err != nil {
			return err
		}
		at := time.Now()
		e.note("froze kube-apiserver (one process; its etcd runs on)")
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
		r := libRefusals(libs) - before
		e.check("no refusal while the API server was frozen for less than the self-fence", r == 0, "%d refused library calls", r)
	case "restore":
		if err := k8sRestore(e, t, lc, libs, before); err != nil {
			return err
		}
	default:
		return fmt.Errorf("chaos: no Kubernetes fault %q", fault)
	}
	return e.wait(scale(e, 3*time.Second, 30*time.Second))
}

// libRefusals sums the library holders' refused calls.
func libRefusals(libs []*library) int64 {
	var n int64
	for _, l := range libs {
		n += l.refusals()
	}
	return n
}

// issuedSince says whether every generator of l streamed an ID stamped at
// or after t.
func (l *library) issuedSince(t time.Time) bool {
	for g := range l.cfg.generators {
		_, hi, ok := l.env.col.span(l.base + int32(g))
		if !ok || l.env.col.layout.TimeOf(snowfence.ID(hi)).Before(t) {
			return false
		}
	}
	return true
}

// waitLibsIssuing waits until every generator of every holder in libs has
// streamed an ID stamped at or after since, and returns when the last did.
func (e *Env) waitLibsIssuing(libs []*library, since time.Time, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	for _, l := range libs {
		for !l.issuedSince(since) {
			if err := pause(ctx, 5*time.Millisecond); err != nil {
				return time.Time{}, fmt.Errorf("%s not issuing again %v after %s", l.name, timeout, since.UTC().Format(time.TimeOnly))
			}
		}
	}
	return time.Now(), nil
}

// k8sRestore (13d) backs up etcd under the running API server (etcdctl
// snapshot save), lets the store move on (a late holder claims a number
// the backup does not know of), keeps the holders away (k8sproc's relay
// blocked), restores the snapshot under the API server without
// --bump-revision — the same objects, UIDs and cluster ID, resourceVersions
// that repeat ones issued after the backup, nothing that says so
// (k8sstore/doc.go, "What a restore looks like") — and does the runbook's
// step as the operator (the admin's certificate, the API server's own
// port): RaiseMarks over every number to now plus the restore window.
// Only then may the holders reach it again. Nothing may be issued between
// the cut-off holders' self-fence and the raised mark, and every holder
// must issue again after it.
func k8sRestore(e *Env, t lease.Timings, lc libraryConfig, libs []*library, before int64) error {
	k := e.tables.k8s
	backup := filepath.Join(e.dir, "etcd.snapshot")
	if err := k.Snapshot(e.ctx, backup); err != nil {
		return err
	}
	e.logf("etcd snapshot taken under the running API server")
	late := lc
	late.machines, late.generators = e.machines("late holder", 1, 1), 1
	ll, err := e.addLibrary(late)
	if err != nil {
		return err
	}
	if err := ll.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	libs = append(libs, ll)
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	k.Block()
	stopped := time.Now()
	revBefore, err := k.Revision(e.ctx)
	if err != nil {
		return err
	}
	restored, err := k.Restore(e.ctx, backup)
	if err != nil {
		return err
	}
	e.logf("restored the snapshot under the API server; the holders cannot reach it yet")
	e.check("the restore took etcd's revision back: resourceVersions issued after the backup are issued again", restored < revBefore,
		"revision %d before the restore, %d restored: resourceVersions %d–%d repeat", revBefore, restored, restored+1, revBefore)
	window := e.restoreWindow() + 10*time.Second
	mark, n, err := e.k8sRaiseMarks(window)
	if err != nil {
		return err
	}
	e.note("operator step: RaiseMarks over 0-1023 to now+%v raised %d marks to %s, %v after the holders were cut off",
		window, n, mark.UTC().Format(time.RFC3339), time.Since(stopped).Round(time.Millisecond))
	k.Unblock()
	back := time.Now()
	e.logf("the holders may reach it again; they must not issue until %s", mark.UTC().Format(time.TimeOnly))
	last, err := e.waitLibsIssuing(libs, mark, window+3*time.Minute)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(back), "every library holder issuing again after the restore and the raise")
	e.note("every library holder issuing again %v after the store came back (the raised mark is %v after the operator's step)",
		last.Sub(back).Round(time.Millisecond), window)
	r := libRefusals(libs) - before
	e.check("the holders refused after the restore", r > 0, "%d refused library calls", r)
	quiet := stopped.Add(t.SelfFence*108/100 + time.Second)
	c := e.col.countBetween(quiet, mark)
	e.check("nothing issued between the cut-off holders' self-fence and the raised mark", c == 0,
		"%d IDs stamped %s … %s %s", c, quiet.UTC().Format(time.TimeOnly), mark.UTC().Format(time.TimeOnly), e.col.machinesBetween(quiet, mark))
	return nil
}

// k8sRaiseMarks is the operator's step on the restored store: k8sstore
// opened with the admin's configuration and the fleet's test bound, its
// RaiseMarks (lease.Admin) over every number of the one keyspace the
// holders lease in (the default schedule) to now plus window — what
// `snowfence leases raise-marks --to now+window` does, which has no
// --lease-store kubernetes yet. It returns the mark and how many records
// changed.
func (e *Env) k8sRaiseMarks(window time.Duration) (time.Time, int, error) {
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	st, err := k8sstore.Open(ctx, k8sstore.Config{Namespace: e.table,
		TestBound: testbound.Of(e.tableMaxSelfFence()).WithMaxReserve(e.tableMaxReserve())}, e.tables.k8s.AdminConfig())
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("operator: open the restored store: %w", err)
	}
	defer st.Close()
	mark := time.UnixMilli(time.Now().Add(window).UnixMilli()) // the store's: whole milliseconds, an ID's grain
	n, err := st.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 1023}, mark.UnixMilli())
	if err != nil {
		return time.Time{}, n, fmt.Errorf("operator: RaiseMarks: %w", err)
	}
	return mark, n, nil
}

// cutLongLibraries is 8a where the store's holders cannot be services
// (Kubernetes: Env.serves): a library holder in a network namespace of its
// own is cut off from the store by the kernel (cutter) for longer than the
// self-fence — past the lease too in the long mode — while one in the host
// namespace leases beside it. The cut holder must issue nothing past its
// self-fence after the cut and refuse, the other must keep issuing, and
// the cut one must issue again once the link is back.
func cutLongLibraries(e *Env) error {
	t, err := e.drawTimings(netBox)
	if err != nil {
		return err
	}
	if err := netns.Available(); err != nil {
		return fmt.Errorf("the network scenarios need network namespaces (root with CAP_NET_ADMIN, the ip command): %w", err)
	}
	z, err := e.newZone(0)
	if err != nil {
		return err
	}
	cut, err := e.zoneLibrary(z, e.machines("zone 0 library holder", 3, 36), 2)
	if err != nil {
		return err
	}
	host, err := e.addLibrary(libraryConfig{machines: e.machines("host library holder", 3, 36), generators: 2, rate: 5000, batch: 50}.timed(t))
	if err != nil {
		return err
	}
	for _, l := range []*library{cut, host} {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	e.note("timings: lease %v, renewal every %v, self-fence %v; %s in a network namespace, %s in the host namespace (library holders: the suite starts no serve on Kubernetes yet)",
		t.LeaseFor, t.RenewEvery, t.SelfFence, cut.name, host.name)
	c, err := e.newCutter([]*zone{z})
	if err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	var held []int
	for g := range cut.machine {
		held = append(held, int(cut.machine[g].Load()))
	}
	before := cut.refusals()
	down := scale(e, t.SelfFence+2*t.RenewEvery, 4*t.LeaseFor)
	at := time.Now()
	if err := c.cut(); err != nil {
		return err
	}
	e.logf("cut %s's store link for %v", cut.name, down)
	if err := e.wait(down); err != nil {
		return err
	}
	quiet := at.Add(t.SelfFence*108/100 + 200*time.Millisecond)
	e.check("the host namespace's holder kept issuing through the cut", host.issuedSince(quiet),
		"every generator issued IDs stamped after %s (its cut neighbour's self-fence)", quiet.UTC().Format(time.TimeOnly))
	if err := c.heal(); err != nil {
		return err
	}
	back := time.Now()
	e.logf("healed after %v", back.Sub(at).Round(time.Millisecond))
	last, err := e.waitLibsIssuing([]*library{cut}, back, 60*time.Second)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(back), "the cut holder issuing again after the link came back")
	n := e.col.countOnBetween(held, quiet, back)
	e.check("the cut holder issued nothing past its self-fence after the cut", n == 0,
		"%d IDs of machines %v stamped %s … %s", n, held, quiet.UTC().Format(time.TimeOnly), back.UTC().Format(time.TimeOnly))
	r := cut.refusals() - before
	e.check("the cut holder refused while fenced", r > 0, "%d refused library calls", r)
	return e.wait(2 * t.RenewEvery)
}
