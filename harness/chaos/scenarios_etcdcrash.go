package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
	"github.com/snowfence/snowfence/lease"
)

// WAN timings of scenario 5f's cluster (etcd's --heartbeat-interval and
// --election-timeout as a cross-zone deployment sets them), and holder
// timings that fence well inside its election gap. etcd raises a lease's
// TTL to 1.5 election timeouts (4.5 s), so the lease is 6 s.
const (
	wanHeartbeat = 300 * time.Millisecond
	wanElection  = 3 * time.Second
	wanTTL       = 6 * time.Second
	wanRenew     = 500 * time.Millisecond
	wanSelfFence = 1500 * time.Millisecond
)

// etcdHolders starts services (four to eight, drawn) and a library holder
// (one to three generators) on drawn ranges of the store with the timings
// t, and load on the services.
func etcdHolders(e *Env, t lease.Timings) ([]*service, *library, *load, error) {
	nSvc, gens := e.count("services", 4, 8), e.count("library generators", 1, 3)
	svcs, err := e.startServices(nSvc, serviceConfig{machines: e.machines("services", nSvc+1, 64)}.timed(t))
	if err != nil {
		return nil, nil, nil, err
	}
	lib, err := e.addLibrary(libraryConfig{machines: e.machines("library holder", gens+1, 64), generators: gens, rate: 5000, batch: 50}.timed(t))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return nil, nil, nil, err
	}
	return svcs, lib, e.startLoad(svcs, loadConfig{callers: 6, rate: 30000, count: 50}), nil
}

// refusalCount is how many requests of a scenario's callers and calls of
// its library holder were refused so far, for the refusals since then.
type refusalCount struct{ requests, library int64 }

func countRefusals(load *load, lib *library) refusalCount {
	return refusalCount{load.refused.Load(), lib.refusals()}
}

// since returns the refusals after c.
func (c refusalCount) since(load *load, lib *library) refusalCount {
	return refusalCount{load.refused.Load() - c.requests, lib.refusals() - c.library}
}

func (c refusalCount) String() string {
	return fmt.Sprintf("%d refused requests, %d refused library calls", c.requests, c.library)
}

// aFollower returns a member other than the current leader.
func aFollower(e *Env) (int, error) {
	leader, err := e.cluster.Leader(e.ctx)
	if err != nil {
		return 0, err
	}
	return (leader + 1) % e.cluster.Size(), nil
}

// slowElection (5f) SIGKILLs the leader of a cluster whose members take
// 3 s to suspect a dead leader (etcd's own flags; the members are
// processes on loopback, and the machine has neither iptables nor nft to
// drop their peer packets, so the gap comes from etcd's failure detector,
// not from a harness in between). No leader means no renewal commits: the
// holders fence 1.5 s after their last renewal, refuse, and issue again
// once the new leader renews their leases (etcd extends every lease on a
// leader change, so none expires in the gap).
func slowElection(e *Env) error {
	e.cluster.Close()
	c, err := etcdproc.Start(e.ctx, etcdproc.Config{
		Dir:       filepath.Join(e.dir, "etcd-wan"),
		Size:      3,
		Command:   func(args ...string) *exec.Cmd { return e.opts.Command(RoleEtcdMember, args...) },
		Stderr:    &prefixWriter{w: e.opts.Log, prefix: "s" + e.id + " etcd: "},
		Heartbeat: wanHeartbeat,
		Election:  wanElection,
	})
	if err != nil {
		return fmt.Errorf("etcd cluster with a %v election timeout: %w", wanElection, err)
	}
	e.cluster = c
	e.note("cluster: heartbeat %v, election timeout %v; holders: lease %v, renewal %v, self-fence %v", wanHeartbeat, wanElection, wanTTL, wanRenew, wanSelfFence)
	wan := e.fixedTimings("holders", lease.Timings{LeaseFor: wanTTL, RenewEvery: wanRenew, SelfFence: wanSelfFence},
		"they must fence inside the 3 s election gap, and etcd raises a lease to 1.5 election timeouts")
	svcs, lib, load, err := etcdHolders(e, wan)
	if err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	before := countRefusals(load, lib)
	leader, err := e.cluster.Leader(e.ctx)
	if err != nil {
		return err
	}
	if err := e.cluster.Kill(leader); err != nil {
		return err
	}
	killed := time.Now()
	e.logf("leader m%d killed", leader)
	fenced, err := e.waitFenced(svcs[0], 4*wanElection)
	if err != nil {
		return err
	}
	e.note("%s fenced itself %v after the leader's SIGKILL", svcs[0].name, fenced.Sub(killed).Round(time.Millisecond))
	if err := e.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	gap := time.Since(killed)
	e.note("etcd took no write for %v after the leader's SIGKILL (election timeout %v)", gap.Round(time.Millisecond), wanElection)
	last, err := e.waitAllIssuing(svcs, 60*time.Second)
	if err != nil {
		return err
	}
	e.recovered(last.Sub(killed), "every service issuing again after the leader's SIGKILL")
	e.note("every service issuing again %v after etcd took writes", last.Sub(killed.Add(gap)).Round(time.Millisecond))
	if err := e.cluster.Restart(e.ctx, leader); err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.check("the election gap outlasted the self-fence", gap > wanSelfFence, "no write for %v, self-fence %v", gap.Round(time.Millisecond), wanSelfFence)
	refused := before.since(load, lib)
	e.check("services and library refused in the gap, then issued again", refused.requests > 0 && refused.library > 0, "%v", refused)
	e.outageRecovery(svcs)
	return nil
}

// tmpfsSize is the tmpfs of scenario 5g's member: room for its data
// (etcd preallocates 64 MB WAL segments, the one it writes and the next)
// and a filler.
const tmpfsSize = 256 << 20

// diskFull (5g) moves a follower's data onto a small tmpfs, fills the
// tmpfs, and writes to the cluster (another tenant's writes) until the
// member fails its own. etcd treats a failed WAL or database write as
// fatal: the member exits; the other two keep the quorum, so the holders
// must not notice. Once space is freed the member restarts on its data
// (or, should that fail, is replaced from an empty directory), any alarm
// is disarmed, and the cluster must take writes again.
func diskFull(e *Env) error {
	tm, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	svcs, lib, load, err := etcdHolders(e, tm)
	if err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	before := countRefusals(load, lib)
	m, err := aFollower(e)
	if err != nil {
		return err
	}
	dir, err := memberOnTmpfs(e, m)
	if err != nil {
		return err
	}
	filler := filepath.Join(dir, "filler")
	if err := fillUp(filler, 64<<10); err != nil {
		return err
	}
	filled := time.Now()
	e.logf("member m%d's tmpfs filled", m)
	value := strings.Repeat("x", 64<<10)
	var writes, failed int
	for ; e.cluster.Running(m) && time.Since(filled) < 20*time.Second; writes++ {
		if err := e.cluster.Put(e.ctx, fmt.Sprintf("chaos-junk/%d", writes), value); err != nil {
			if failed++; failed == 1 {
				e.note("a write failed while m%d's disk was full: %v", m, firstLine(err.Error()))
			}
		}
	}
	e.note("%d of %d writes of 64 KiB failed while m%d's disk was full", failed, writes, m)
	state := "exited"
	if e.cluster.Running(m) {
		state = "still running"
	}
	e.check("the member with the full disk failed its writes and stopped", state == "exited",
		"m%d %s after %d writes of 64 KiB, %v after its disk filled (etcd: a failed WAL or database write is fatal)",
		m, state, writes, time.Since(filled).Round(time.Millisecond))
	alarms, err := e.cluster.Alarms(e.ctx)
	e.note("alarms with m%d down: %v (err %v)", m, alarms, err)
	if err := e.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	if err := os.Remove(filler); err != nil {
		return err
	}
	t := time.Now()
	if err := e.cluster.Restart(e.ctx, m); err != nil {
		e.note("m%d did not restart on its data once space was freed: %s; replaced from an empty directory", m, firstLine(err.Error()))
		if err := e.cluster.Replace(e.ctx, m); err != nil {
			return err
		}
	}
	e.note("m%d back %v after space was freed", m, time.Since(t).Round(time.Millisecond))
	if len(alarms) > 0 {
		if err := e.cluster.DisarmAlarms(e.ctx); err != nil {
			return err
		}
	}
	if err := e.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	load.stop()
	e.check("the other two members kept the holders going", before.since(load, lib) == refusalCount{}, "%v", before.since(load, lib))
	e.outageRecovery(svcs)
	return nil
}

// memberOnTmpfs restarts member m with its data directory on a tmpfs of
// tmpfsSize (its data copied there, sparse) and returns the directory.
// The scenario's cleanup kills the member and unmounts the tmpfs, on
// failure too.
func memberOnTmpfs(e *Env, m int) (string, error) {
	dir := filepath.Join(e.dir, "etcd", fmt.Sprintf("m%d", m))
	if err := e.cluster.Kill(m); err != nil {
		return "", err
	}
	disk := dir + ".disk"
	if err := os.Rename(dir, disk); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", tmpfsSize), "tmpfs", dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mount a tmpfs on m%d's data: %v: %s", m, err, out)
	}
	e.cleanups = append(e.cleanups, func() {
		e.cluster.Kill(m)
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			e.note("umount %s: %v: %s; detached lazily", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
	if out, err := exec.Command("cp", "-a", "--sparse=always", disk+"/.", dir+"/").CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy m%d's data to the tmpfs: %v: %s", m, err, out)
	}
	if err := e.cluster.Restart(e.ctx, m); err != nil {
		return "", err
	}
	e.logf("member m%d runs on a tmpfs of %d MiB", m, tmpfsSize>>20)
	return dir, nil
}

// fillUp allocates a file at path taking all but leave bytes of its
// filesystem's free space. The member just restarted on it may still be
// preallocating its next WAL segment (64 MB), so the free space can shrink
// between the measure and the allocation: an allocation refused for space
// (ENOSPC) is measured and tried again, a few times.
func fillUp(path string, leave int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for range 5 {
		var st syscall.Statfs_t
		if err = syscall.Statfs(filepath.Dir(path), &st); err != nil {
			break
		}
		free := int64(st.Bavail) * st.Bsize
		if free <= leave {
			err = nil
			break
		}
		var size int64
		if fi, serr := f.Stat(); serr == nil {
			size = fi.Size()
		}
		if err = syscall.Fallocate(int(f.Fd()), 0, 0, size+free-leave); !errors.Is(err, syscall.ENOSPC) {
			break
		}
	}
	return errors.Join(err, f.Close())
}

// readdEmpty (5h) replaces a follower whose data is lost, as etcd's
// runbook says: member remove, an empty data directory, member add under
// the same peer URL, start with --initial-cluster-state existing. Then
// the leader is killed, so the quorum rests on the re-added member: it
// must hold every holder's lease and mark. Neither step may cost a
// refusal under etcd's timings (self-fence 5 s).
func readdEmpty(e *Env) error {
	tm, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	svcs, lib, load, err := etcdHolders(e, tm)
	if err != nil {
		return err
	}
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	before := countRefusals(load, lib)
	m, err := aFollower(e)
	if err != nil {
		return err
	}
	t := time.Now()
	if err := e.cluster.Replace(e.ctx, m); err != nil {
		return err
	}
	e.note("m%d removed, emptied, re-added and caught up in %v", m, time.Since(t).Round(time.Millisecond))
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	leader, err := e.cluster.Leader(e.ctx)
	if err != nil {
		return err
	}
	if leader == m {
		e.note("the re-added m%d leads; killing it instead", m)
	}
	if err := e.cluster.Kill(leader); err != nil {
		return err
	}
	killed := time.Now()
	if err := e.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	e.recovered(time.Since(killed), fmt.Sprintf("etcd writable again after m%d's SIGKILL, the re-added m%d in the quorum", leader, m))
	if err := e.wait(scale(e, 2*time.Second, 30*time.Second)); err != nil {
		return err
	}
	if err := e.cluster.Restart(e.ctx, leader); err != nil {
		return err
	}
	load.stop()
	e.check("no refusal while a member was replaced and the quorum rested on it", before.since(load, lib) == refusalCount{}, "%v", before.since(load, lib))
	e.outageRecovery(svcs)
	return nil
}
