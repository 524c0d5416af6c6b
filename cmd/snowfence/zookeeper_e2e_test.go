package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// zkFlags are the store flags that point serve and the CLI at path on the
// ZooKeeper servers of e.
func zkFlags(e *zktest.Ensemble, path string) []string {
	return []string{"--lease-store", "zookeeper", "--zk-servers", e.ConnectString(), "--zk-path", path, "--zk-session-timeout", "4s"}
}

// serve on ZooKeeper, a real server from zktest: a holder claims its
// number with the tables' timings (its mark minutes ahead), mints on it and
// releases it at SIGTERM; the next holder of the number mints above what
// the first issued. With --zk-digest, every znode the fleet created is
// closed to a session without the credentials.
func TestE2EZooKeeper(t *testing.T) {
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
