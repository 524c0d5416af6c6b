package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// zkFlags are the store flags that point serve and the CLI at path on the
// ZooKeeper servers of e.
func zkFlags(e *zktest.Ensemble, path string) []string {
	return []string{"--lease-store", "zookeeper", "--zk-servers", e.ConnectString(), "--zk-path", path}
}

// serve on ZooKeeper, a real server from zktest: a holder claims its
// number with the tables' timings (its mark minutes ahead), mints on it and
// releases it at SIGTERM; the next holder of the number mints above what
// the first issued. With --zk-digest, every znode the fleet created is
// closed to a session without the credentials.
func TestE2EZooKeeper(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel() // mostly waits out the claims' notice windows (23 s in these tests)
	e := zktest.Start(t, 1)
	for _, tc := range []struct {
		name, path string
		extra      []string
	}{
		{"open", "/e2e-open", nil},
		{"digest", "/e2e-digest", []string{"--zk-digest", "fleet:s3cret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flags := append(zkFlags(e, tc.path), tc.extra...)
			s := startService(t, t.TempDir(), append(flags, "--machines", "9-9")...)
			ids := mintUntilReady(t, s, 10, 60*time.Second)
			if d, _ := snowfence.Decode(ids[0]); d.Machine != 9 {
				t.Errorf("machine %d, want 9", d.Machine)
			}
			rec := zkRecord(t, e, tc.path, 9, tc.extra != nil)
			if rec.Holder == "" {
				t.Fatalf("lease znode of 9 while held: %+v, want a holder", rec)
			}
			// The tables' timings: a 5-minute lease is the reservation.
			if ahead := time.Until(time.UnixMilli(rec.MarkMs)); ahead < 4*time.Minute {
				t.Errorf("mark only %s ahead; the tables' timings give 5 min", ahead)
			}
			s.stop(t)
			if rec := zkRecord(t, e, tc.path, 9, tc.extra != nil); rec.Holder != "" {
				t.Fatalf("after SIGTERM: %+v, want released", rec)
			}
			s2 := startService(t, t.TempDir(), append(flags, "--machines", "9-9")...)
			next := mintUntilReady(t, s2, 1, 60*time.Second)
			if next[0] <= ids[len(ids)-1] {
				t.Errorf("after restart: %d, want an ID above %d", next[0], ids[len(ids)-1])
			}
			s2.stop(t)
			if tc.extra == nil {
				return
			}
			// Without the credentials nothing the fleet created can be
			// read or rewritten.
			c := zkConn(t, e, false)
			for _, p := range []string{tc.path + "/origin", tc.path + "/leases/0/9"} {
				if _, _, err := c.Get(p); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("get %s without the fleet's credentials: %v, want ErrNoAuth", p, err)
				}
				if _, err := c.Set(p, []byte("{}"), -1); !errors.Is(err, zk.ErrNoAuth) {
					t.Errorf("set %s without the fleet's credentials: %v, want ErrNoAuth", p, err)
				}
			}
		})
	}
}

// zkConn is a ZooKeeper session on e, with the digest test's credentials
// if digest, closed when the test ends.
func zkConn(t *testing.T, e *zktest.Ensemble, digest bool) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(e.Servers(), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if digest {
		if err := c.AddAuth("digest", []byte("fleet:s3cret")); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// zkRecord reads the lease znode of machine in region 0 under path.
func zkRecord(t *testing.T, e *zktest.Ensemble, path string, machine int, digest bool) (rec struct {
	Holder string `json:"holder"`
	MarkMs int64  `json:"mark_ms"`
}) {
	t.Helper()
	p := fmt.Sprintf("%s/leases/0/%d", path, machine)
	data, _, err := zkConn(t, e, digest).Get(p)
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %q: %v", p, data, err)
	}
	if !strings.Contains(string(data), `"mark_ms"`) {
		t.Fatalf("%s: %q has no mark_ms", p, data)
	}
	return rec
}

// The operator's commands on ZooKeeper (operatorScenario).
func TestE2EZooKeeperOperatorCLI(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel()
	e := zktest.Start(t, 1)
	operatorScenario(t, zkFlags(e, "/e2e-operator"), operatorStore{kind: "zookeeper", key40: "/e2e-operator/leases/0/40", keyWhat: "ZooKeeper znode"})
}

// operatorStore is what operatorScenario expects of a store: its name in
// regions list, and leases key 40's answer (stdout) and description
// (stderr).
type operatorStore struct{ kind, key40, keyWhat string }

// operatorScenario runs the operator's commands on the store flags give,
// beside a running holder of number 40: leases list, show, key, quarantine
// (the holder stops), release (unquarantine) and raise-marks; schedule
// show and set; regions add and list.
func operatorScenario(t *testing.T, flags []string, st operatorStore) {
	t.Helper()
	with := func(args ...string) []string { return append(args, flags...) }
	s := startService(t, t.TempDir(), slices.Concat(flags, shortTableTimings, []string{"--machines", "40-40"})...)
	ids := mintUntilReady(t, s, 1, 60*time.Second)
	type rec struct {
		Machine     int    `json:"machine"`
		Holder      string `json:"holder"`
		Token       uint64 `json:"token"`
		MarkMs      int64  `json:"mark_ms"`
		Quarantined bool   `json:"quarantined"`
	}
	records := func(args ...string) []rec {
		t.Helper()
		out, _ := cli(t, 0, with(args...)...)
		var rs []rec
		if err := json.Unmarshal([]byte(out), &rs); err != nil {
			t.Fatalf("snowfence %v: %q: %v", args, out, err)
		}
		return rs
	}
	if rs := records("leases", "list", "--json"); len(rs) != 1 || rs[0].Machine != 40 || rs[0].Holder == "" || rs[0].Token == 0 {
		t.Fatalf("leases list --json = %+v; want machine 40 held", rs)
	}
	if out, _ := cli(t, 0, with("leases", "show", "40")...); !strings.Contains(out, "MACHINE") {
		t.Errorf("leases show 40:\n%s", out)
	}
	// The raw key: the lease znode for zkCli.sh, the Lease object for kubectl.
	if out, errOut := cli(t, 0, with("leases", "key", "40")...); strings.TrimSpace(out) != st.key40 || !strings.Contains(errOut, st.keyWhat) {
		t.Errorf("leases key 40: %q, %q; want %q, a %s", out, errOut, st.key40, st.keyWhat)
	}
	cli(t, 0, with("leases", "quarantine", "40")...)
	if rs := records("leases", "show", "40", "--json"); len(rs) != 1 || !rs[0].Quarantined {
		t.Fatalf("after quarantine: %+v", rs)
	}
	// The holder's renewal is refused: it stops issuing.
	deadline := time.Now().Add(30 * time.Second)
	for call(t, "POST", s.url+"/v1/ids", "", "").status == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the holder of a quarantined number still mints after 30 s")
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
	s.stop(t)
	cli(t, 0, with("leases", "release", "40")...)
	cli(t, 1, with("leases", "release", "40")...) // not quarantined any more
	if rs := records("leases", "show", "40", "--json"); rs[0].Quarantined || rs[0].Holder != "" {
		t.Fatalf("after release: %+v, want free", rs)
	}
	out, _ := cli(t, 0, with("leases", "raise-marks", "--to", "now+10m", "--machines", "41-42", "--layout", "v1", "--json", "--yes")...)
	var raised struct{ Raised, Numbers, Keyspaces int }
	if err := json.Unmarshal([]byte(out), &raised); err != nil || raised.Raised != 2 || raised.Numbers != 2 || raised.Keyspaces != 1 {
		t.Errorf("raise-marks --layout v1: %s", out)
	}
	if rs := records("leases", "show", "41", "--json"); len(rs) != 1 || time.Until(time.UnixMilli(rs[0].MarkMs)) < 9*time.Minute {
		t.Errorf("after raise-marks to now+10m: %+v", rs)
	}
	// The next holder of 40 starts above everything issued on it.
	s2 := startService(t, t.TempDir(), slices.Concat(flags, shortTableTimings, []string{"--machines", "40-40"})...)
	if next := mintUntilReady(t, s2, 1, 60*time.Second); next[0] <= ids[0] {
		t.Errorf("after quarantine and release: %d, want above %d", next[0], ids[0])
	}
	s2.stop(t)

	show := func() fleet { t.Helper(); return showSchedule(t, flags...) }
	before := show()
	far := "v1,v2@2099-01-01T00:00:00Z"
	cli(t, 0, with("schedule", "set", far)...)
	if got := show(); got.Schedule != far || got.Version != before.Version+1 {
		t.Errorf("schedule set %s: show %+v, want version %d", far, got, before.Version+1)
	}
	// Regions need a layout with region bits: the far v2 gives them.
	cli(t, 0, with("regions", "add", "us-east-1", "--create")...)
	if out, _ := cli(t, 0, with("regions", "list")...); !strings.Contains(out, "us-east-1") || !strings.Contains(out, st.kind) {
		t.Errorf("regions list:\n%s\nwant us-east-1 and the %s copy", out, st.kind)
	}
}
