package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// A holder run by the who test: the serve process and the IDs it minted.
type whoHolder struct {
	name string
	s    *service
	pid  int
	ids  []snowfence.ID
}

// mintUntilReady asks s for count IDs until it answers 200 (a spare
// answers 503 while it waits for a number), for at most within.
func mintUntilReady(t *testing.T, s *service, count int, within time.Duration) []snowfence.ID {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		r := call(t, "POST", s.url+"/v1/ids?count="+strconv.Itoa(count), "", "")
		if r.status == http.StatusOK {
			var b struct{ IDs []snowfence.ID }
			if err := json.Unmarshal([]byte(r.body), &b); err != nil || len(b.IDs) != count {
				t.Fatalf("POST: %s, %v", r.body, err)
			}
			return b.IDs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no IDs within %s: last answer %d %s\n%s", within, r.status, r.body, s.stderr)
		}
		<-tick.C
	}
}

// TestE2EWho: holders come and go on two machine numbers — claims, a
// SIGKILL (the lease runs out and a spare takes the number over), a
// SIGTERM (a release) — on each lease store (ZooKeeper: TestE2EWhoZooKeeper); then `snowfence who` is asked
// about IDs from every holder's interval (the first, the last and random
// ones of each batch): every answer names the process that minted the ID,
// by pid and process start, and no number's journal has two intervals that
// overlap, so no ID can have two answers.
func TestE2EWho(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows on the lease tables: beside the other such tests
	timings := whoTimings
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		etcd := etcdtest.Start(t, 1)
		whoScenario(t, []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}, timings)
	})
	forEachTableStore(t, "who", func(t *testing.T, flags []string) {
		if out, err := exec.Command(binary(t), append([]string{"leases", "init"}, flags...)...).CombinedOutput(); err != nil {
			t.Fatalf("leases init: %v\n%s", err, out)
		}
		whoScenario(t, flags, timings)
	})
}

// whoTimings are the who scenario's holders' timings and range.
var whoTimings = []string{"--lease-ttl", "3s", "--renew-every", "500ms", "--self-fence", "2s", "--fence-margin", "500ms", "--machines", "20-21"}

// TestE2EWho's scenario on ZooKeeper (a real server from zktest): a test
// of its own, named for the ZooKeeper step of scripts/test. Its holders
// renew every 2 s (shortTableTimings), giving each renewal 1 s.
func TestE2EWhoZooKeeper(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel()
	whoScenario(t, zkFlags(zktest.Start(t, 1), "/who"), append(slices.Clone(shortTableTimings), "--machines", "20-21"))
}

func whoScenario(t *testing.T, store, timings []string) {
	// launch starts a holder's process; ready waits for its first IDs,
	// once its claim's notice window (23 s on a lease table in these tests) has passed.
	// a's and b's windows overlap; c's and d's cannot (c must hold b's
	// number before a releases its own).
	launch := func(name string) *whoHolder {
		s := startService(t, t.TempDir(), append(append([]string{}, store...), timings...)...)
		return &whoHolder{name: name, s: s, pid: s.cmd.Process.Pid}
	}
	ready := func(h *whoHolder) { h.ids = append(h.ids, mintUntilReady(t, h.s, 50, 60*time.Second)...) }
	mint := func(h *whoHolder) { h.ids = append(h.ids, mintUntilReady(t, h.s, 50, 10*time.Second)...) }
	// a and b take the two numbers; b is killed; c waits as a spare and
	// takes b's number once its lease ran out; a releases (SIGTERM); d
	// claims a's number above a's final mark.
	a, b := launch("a"), launch("b")
	ready(a)
	ready(b)
	mint(a)
	mint(b)
	b.s.cmd.Process.Signal(syscall.SIGKILL)
	<-b.s.done
	b.s.done <- nil // for the cleanup
	c := launch("c")
	ready(c) // before a releases, so that c takes b's number
	mint(a)
	a.s.stop(t)
	d := launch("d")
	ready(d)
	mint(c)
	mint(d)
	holders := []*whoHolder{a, b, c, d}

	cli := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary(t), append(args, store...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code == exitUsage {
			t.Fatalf("snowfence %v: usage error\n%s", args, errb.String())
		}
		return out.String() + errb.String(), code
	}
	// No number's journal has overlapping intervals.
	for _, n := range []string{"20", "21"} {
		out, code := cli("leases", "history", n, "--json")
		var ivs []lease.Interval
		if err := json.Unmarshal([]byte(out), &ivs); code != 0 || err != nil {
			t.Fatalf("leases history %s: exit %d, %v\n%s", n, code, err, out)
		}
		if err := lease.CheckIntervals(ivs); err != nil {
			t.Error(err)
		}
		if len(ivs) < 2 {
			t.Errorf("leases history %s: %d entries, want at least two holders of each number\n%s", n, len(ivs), out)
		}
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 15))
	asked := 0
	for _, h := range holders {
		probes := []snowfence.ID{h.ids[0], h.ids[len(h.ids)-1]}
		for range 4 {
			probes = append(probes, h.ids[rnd.IntN(len(h.ids))])
		}
		for _, id := range probes {
			out, code := cli("who", id.String(), "--json")
			var ans whoAnswer
			if err := json.Unmarshal([]byte(out), &ans); err != nil || code != 0 || ans.Interval == nil {
				t.Errorf("who %d (minted by %s, pid %d): exit %d, %v\n%s", id, h.name, h.pid, code, err, out)
				continue
			}
			asked++
			if ans.PID != h.pid {
				t.Errorf("who %d = pid %d (%s), want %s's pid %d", id, ans.PID, ans.Interval.Holder, h.name, h.pid)
			}
		}
	}
	// The text form, as the runbook shows it.
	if out, code := cli("who", d.ids[0].String()); code != 0 || !strings.Contains(out, "minted by") || !strings.Contains(out, "pid") {
		t.Errorf("who (text): exit %d\n%s", code, out)
	}
	// An ID no holder issued: machine 22 was never claimed.
	never, err := snowfence.V1().ComposeAt(time.Now(), 0, 22, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := cli("who", never.String()); code != 1 || !strings.Contains(out, "NOT IN THE JOURNAL") {
		t.Errorf("who of an ID of an unclaimed number: exit %d, want 1 and NOT IN THE JOURNAL\n%s", code, out)
	}
	t.Logf("%d who answers, each naming the process that minted the ID", asked)
	c.s.stop(t)
	d.s.stop(t)
}
