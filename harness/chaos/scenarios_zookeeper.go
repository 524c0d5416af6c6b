package chaos

import (
	"time"

	"github.com/snowfence/snowfence/lease"
)

// ZooKeeper's own faults (12a–12d) run the table scenarios' shapes
// (tableFault): the store's leases are a table's — a mark judged by the
// claimer's clock, zkstore.Timings = lease.TableTimings — so its holders
// take the tables' short-mode timings (tableBox) and test bound
// (shortTableMaxSelfFence, with a reserve on ZooKeeper:
// shortTableMaxReserve). Its server is one process (a JVM): killed and
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
// It runs in the short mode too, unlike PostgreSQL's 9d: the raised mark
// is the store's restore window away — `snowfence leases raise-marks`
// refuses less — and the holders' Store values, which saw the later state,
// notice the restore and floor their next claims a restore window ahead
// too (zkstore's restore floor), so the holders refuse for about that
// window whatever their timings. On the tables' own timings (the long
// mode) it is 6 min (zkstore.MaxRestoreWindow). The short mode's test
// bound on ZooKeeper carries a reserve as well as a self-fence
// (shortTableMaxReserve, internal/testbound), and zkstore — alone among
// the stores — honours it: its restore window is then the test fleet's,
// lease.RestoreWindow(12 s, 6 s) = 14.2 s, which every holder's keeper is
// checked against (StartKeeper refuses a longer one; the draws are checked
// against it too), and the raise-marks the operator step runs, a test
// build given the same bound (storeEnv), accepts a --to that close. The
// drill then costs well under two minutes, so the issue's "restored from a
// backup" is in ZooKeeper's short mode. PostgreSQL and DynamoDB keep their
// 6 min (a reserve in the bound does not move them), and 9d the long mode.
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
	window := e.restoreWindow() + 10*time.Second // zkstore.MaxRestoreWindow, or the short mode's bound's
	ls, lateLoad, err := e.lateService(sc, window+6*time.Minute)
	if err != nil {
		return err
	}
	svcs = append(svcs, ls)
	if err := zk.Kill(); err != nil {
		return err
	}
	stopped := time.Now()
	aside, err := zk.RestoreAside(e.ctx, backup)
	if err != nil {
		return err
	}
	e.logf("restored the cold copy; the server serves on %s only, where no holder looks", aside)
	mark, err := e.raiseMarks(window, stopped,
		[]string{"--lease-store", "zookeeper", "--zk-servers", aside, "--zk-path", e.table},
		e.storeEnv()) // the fleet's test bound: its restore window
	if err != nil {
		return err
	}
	if err := zk.Reopen(e.ctx); err != nil {
		return err
	}
	// The holders were cut off since the crash: each stopped at its
	// self-fence after its last acknowledged renewal, or stops at its
	// first renewal after this (refused: the raise took its number).
	return e.checkRaised(t, svcs, lateLoad, refusedSince, window, stopped, time.Now(), mark)
}
