package chaos

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// ZooKeeper's own faults (12a–12d) run the table scenarios' shapes
// (tableFault): the store's leases are a table's — a mark judged by the
// claimer's clock, zkstore.Timings = lease.TableTimings — so its holders
// take the tables' short-mode timings (tableBox) and test bound
// (shortTableMaxSelfFence). Its server is one process (a JVM): killed and
// started on its data, frozen, or restored from a cold copy of its data
// directory. The partition from the holders is 8a's, which runs on every
// store.

// zkRestore (12d) takes a cold copy of the server's data (killed, copied,
// started again: the holders ride out a short outage), lets the store
// move on (a late service claims a number the copy does not know of),
// kills the server and puts the copy back: the same server and port,
// older data, zxids and znode versions that repeat ones issued after the
// copy, nothing that says so (zkstore/doc.go, "What a restore looks
// like"). The restored server first serves on a port of its own, where
// the operator runs the runbook's step — raise-marks over every number,
// to now plus the restore window — before the holders can reach it; then
// it serves on its own port again. Every holder must refuse until the
// raised mark, and nothing may repeat.
//
// It runs in the long mode only, as PostgreSQL's 9d: the raised mark is
// the store's restore window (6 min) away — `snowfence leases
// raise-marks` refuses less — and the holders' Store values, which saw
// the later state, notice the restore and floor their next claims a
// restore window ahead too (zkstore's restore floor, which the short
// mode's test bound does not shorten): the holders refuse for about six
// minutes whatever the timings. The short mode's restores on ZooKeeper
// are the search's (harness/explore), on fake clocks.
func zkRestore(e *Env, t lease.Timings, sc serviceConfig, svcs []*service, refusedSince func() (int64, int64)) error {
	zk := e.tables.zk
	if err := zk.Kill(); err != nil {
		return err
	}
	backup, err := zk.CopyData(e.ctx)
	if err == nil {
		err = zk.Start(e.ctx)
	}
	if err != nil {
		return err
	}
	e.logf("cold copy of the ZooKeeper data taken (killed, copied, started)")
	late := sc
	late.machines = e.machines("late service", 1, 1)
	ls, err := e.addService(late) // its claim is not in the copy
	if err != nil {
		return err
	}
	if err := ls.waitServing(e.ctx, 60*time.Second); err != nil {
		return err
	}
	svcs = append(svcs, ls)
	window := zkstore.MaxRestoreWindow + 10*time.Second
	lateLoad := e.startLoad([]*service{ls}, loadConfig{callers: 1, rate: 2000, count: 10, deadline: window + 6*time.Minute})
	if err := e.wait(scale(e, 3*time.Second, 30*time.Second)); err != nil {
		return err
	}
	if err := zk.Kill(); err != nil {
		return err
	}
	stopped := time.Now()
	aside, err := zk.RestoreAside(e.ctx, backup)
	if err != nil {
		return err
	}
	e.logf("restored the cold copy; the server serves on %s only, where no holder looks", aside)
	out, err := exec.CommandContext(e.ctx, e.opts.Snowfence, "leases", "raise-marks", "--to", "now+"+window.String(),
		"--lease-store", "zookeeper", "--zk-servers", aside, "--zk-path", e.table, "--machines", "0-1023", "--json", "--yes").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return fmt.Errorf("snowfence leases raise-marks: %v: %s%s", err, out, stderr)
	}
	var raised struct {
		Raised int   `json:"raised"`
		MarkMs int64 `json:"mark_ms"`
	}
	if err := json.Unmarshal(out, &raised); err != nil {
		return fmt.Errorf("raise-marks --json: %v: %s", err, out)
	}
	mark := time.UnixMilli(raised.MarkMs)
	e.note("operator step: raise-marks --to now+%v raised %d marks to %s, %v after the crash", window, raised.Raised,
		mark.UTC().Format(time.RFC3339), time.Since(stopped).Round(time.Millisecond))
	if err := zk.Reopen(e.ctx); err != nil {
		return err
	}
	back := time.Now()
	e.logf("the holders may reach it again; they must refuse until %s", mark.UTC().Format(time.TimeOnly))
	// The holders were cut off since the crash: each stopped at its
	// self-fence after its last acknowledged renewal, or stops at its
	// first renewal after this (refused: the raise took its number).
	noticeBy := 2*t.RenewEvery + 2*time.Second
	var missed []string
	for _, s := range svcs {
		if _, err := e.waitFenced(s, noticeBy); err != nil {
			missed = append(missed, s.name)
		}
	}
	e.check("every service stopped issuing at its first renewal after the operator's step", len(missed) == 0,
		"still issuing %v after the store came back: %v", noticeBy, missed)
	last, err := e.waitAllIssuing(svcs, window+3*time.Minute)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(back), "every service issuing again after the restore and raise-marks")
	e.note("every service issuing again %v after the store came back (the raised mark is %v after the operator's step)",
		last.Sub(back).Round(time.Millisecond), window)
	r, l := refusedSince()
	e.check("the holders refused after the restore", r > 0 && l > 0, "%d refused requests, %d refused library calls", r, l)
	lateLoad.stop()
	// A holder cut off by the crash issues until its self-fence, at most
	// self-fence (×1.08 for a slow clock) after its last renewal; the
	// claims after the restore start at the raised mark.
	quiet := stopped.Add(t.SelfFence*108/100 + time.Second)
	n := e.col.countBetween(quiet, mark)
	e.check("nothing issued between the cut-off holders' self-fence and the raised mark", n == 0,
		"%d IDs stamped %s … %s", n, quiet.UTC().Format(time.TimeOnly), mark.UTC().Format(time.TimeOnly))
	return nil
}
