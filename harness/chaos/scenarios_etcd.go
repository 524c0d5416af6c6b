package chaos

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// etcdFault runs services and library holders while etcd suffers fault.
func etcdFault(e *Env, fault string) error {
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	nSvc, gens := e.count("services", 4, 8), e.count("library generators", 1, 3)
	svcs, err := e.startServices(nSvc, serviceConfig{machines: e.machines("services", nSvc+1, 64)}.timed(t))
	if err != nil {
		return err
	}
	lib, err := e.addLibrary(libraryConfig{machines: e.machines("library holder", gens+1, 64), generators: gens, rate: 5000, batch: 50}.timed(t))
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
