package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
)

// cli runs the binary with args and wants exit status want; it returns
// stdout and stderr.
func cli(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("snowfence %v: exit %d, want %d\nstdout %s\nstderr %s", args, code, want, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// waitRenewedAfter polls s's /healthz until its keeper reports a renewal
// sent after since, and returns whether s was still ready then.
func waitRenewedAfter(t *testing.T, s *service, since time.Time, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := call(t, "GET", s.url+"/healthz", "", "")
		var h struct {
			Lease struct {
				LastRenewal time.Time `json:"last_renewal"`
			} `json:"lease"`
		}
		if err := json.Unmarshal([]byte(r.body), &h); err == nil && h.Lease.LastRenewal.After(since) {
			return call(t, "GET", s.url+"/readyz", "", "").status == 200
		}
		if time.Now().After(deadline) {
			t.Fatalf("no renewal after %s within %s: %d %s", since.Format(time.RFC3339Nano), within, r.status, r.body)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// fleet is the fleet's schedule as `snowfence schedule show --json` and
// `schedule set --json` print it.
type fleet struct {
	Schedule string `json:"schedule"`
	Version  int64  `json:"version"`
}

// showSchedule runs `snowfence schedule show --json` with the store's
// flags and returns the fleet's schedule.
func showSchedule(t *testing.T, flags ...string) fleet {
	t.Helper()
	out, _ := cli(t, 0, append([]string{"schedule", "show", "--json"}, flags...)...)
	var f fleet
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("schedule show --json: %q: %v", out, err)
	}
	return f
}

// snowfence schedule show and set next to a running serve on its embedded
// etcd, and what the fleet schedule does to holders: one on another
// schedule is refused at start, and a running one goes on renewing while
// its marks stay below the first instant the two schedules differ. serve also refuses, at start, a range
// or region its schedule cannot hold.
func TestE2EScheduleCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startService(t, dir, "--machines", "40-40")
	url, err := embedetcd.ReadClientURL(dir)
	if err != nil {
		t.Fatal(err)
	}
	ep := []string{"--etcd-endpoints", url}
	withDir := func(args ...string) []string { return append(args, "--data-dir", dir) }

	show := func() fleet { t.Helper(); return showSchedule(t, "--data-dir", dir) }
	if f := show(); f != (fleet{"v1", 0}) {
		t.Fatalf("fresh store: %+v, want v1 at version 0", f)
	}
	if out, _ := cli(t, 0, withDir("schedule", "show")...); !strings.Contains(out, "v1") || !strings.Contains(out, "never set") {
		t.Errorf("schedule show:\n%s", out)
	}

	// serve refuses, before claiming, what its schedule cannot hold.
	_, errOut := cli(t, 1, append([]string{"serve", "--listen", "127.0.0.1:0", "--region", "1", "--machines", "41-41"}, ep...)...)
	if !strings.Contains(errOut, "no region bits") {
		t.Errorf("serve --region 1 under v1: stderr %s", errOut)
	}
	far := "v1,v2@2099-01-01T00:00:00Z"
	_, errOut = cli(t, 1, append([]string{"serve", "--listen", "127.0.0.1:0", "--schedule", far, "--machines", "0-1023"}, ep...)...)
	if !strings.Contains(errOut, "machines 0-511 only") || !strings.Contains(errOut, "--machines 0-1023,v2=lo-hi") {
		t.Errorf("serve --schedule %s with --machines 0-1023: stderr %s", far, errOut)
	}
	// A holder on another schedule than the fleet's is refused.
	_, errOut = cli(t, 1, append([]string{"serve", "--listen", "127.0.0.1:0", "--schedule", far, "--machines", "41-41"}, ep...)...)
	if !strings.Contains(errOut, "differs from the fleet's") {
		t.Errorf("serve --schedule %s with the fleet on v1: stderr %s", far, errOut)
	}

	// set: a cutover within the notice is refused; a far one is set.
	near := "v1,v2@" + time.Now().Add(10*time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)
	if _, errOut := cli(t, 1, withDir("schedule", "set", near)...); !strings.Contains(errOut, "pick a later cutover") {
		t.Errorf("set %s (10 min ahead, notice 1 h): stderr %s", near, errOut)
	}
	cli(t, 2, withDir("schedule", "set", "v9")...)
	cli(t, 2, withDir("schedule", "set")...)
	cli(t, 2, withDir("schedule", "set", far, "--notice", "-1h")...)
	cli(t, 1, withDir("schedule", "set", far, "--notice", "10m")...) // shorter than the minimum notice
	setAt := time.Now()
	out, _ := cli(t, 0, withDir("schedule", "set", far, "--json")...)
	var set fleet
	if err := json.Unmarshal([]byte(out), &set); err != nil || set != (fleet{far, 1}) {
		t.Fatalf("schedule set --json: %q, %v; want %s at version 1", out, err, far)
	}
	if out, _ := cli(t, 0, withDir("schedule", "set", far)...); !strings.Contains(out, "nothing changed") {
		t.Errorf("setting the same schedule again: %s", out)
	}
	if out, _ := cli(t, 0, withDir("schedule", "show")...); !strings.Contains(out, far) || !strings.Contains(out, "version   1") || !strings.Contains(out, "from 2099-01-01T00:00:00Z") {
		t.Errorf("schedule show after set:\n%s", out)
	}

	// The running serve, still on v1, renews on: v1 and the fleet's new
	// schedule agree until 2099, so it has until then to restart.
	if !waitRenewedAfter(t, s, setAt, 10*time.Second) {
		t.Errorf("the serve on v1 stopped being ready after a renewal, though the fleet's schedule differs only from 2099 on")
	}
	if r := call(t, "POST", s.url+"/v1/ids", "", ""); r.status != 200 {
		t.Errorf("serve on v1 after the fleet schedule moved to %s: %d %s", far, r.status, r.body)
	}
	// A holder on the fleet's schedule starts and issues.
	s2 := startService(t, t.TempDir(), append(ep, "--schedule", far, "--machines", "41-41")...)
	if r := call(t, "POST", s2.url+"/v1/ids", "", ""); r.status != 200 {
		t.Errorf("serve on the fleet's schedule: %d %s", r.status, r.body)
	}
	s2.stop(t)
	s.stop(t)
	if !strings.Contains(s.stderr.String(), "WARNING: the embedded etcd leases machine numbers on this host only") {
		t.Errorf("serve on the embedded etcd printed no warning that it is one host's; stderr:\n%s", s.stderr)
	}
}

// snowfence schedule on the lease tables (PostgreSQL and DynamoDB through
// dynalite): show, set a far cutover, set back to v1. The table is the
// test's own and may hold a schedule from an earlier run, so each step is
// checked against what show said before it.
func TestE2EScheduleTableStores(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows on the lease tables: beside the other such tests
	forEachTableStore(t, "e2e_schedule", func(t *testing.T, flags []string) {
		with := func(args ...string) []string { return append(args, flags...) }
		cli(t, 0, with("leases", "init")...)
		show := func() fleet { t.Helper(); return showSchedule(t, flags...) }
		before := show()
		far := "v1,v2@2099-01-01T00:00:00Z"
		for _, text := range []string{far, "v1"} {
			out, _ := cli(t, 0, with("schedule", "set", text, "--json")...)
			var set fleet
			if err := json.Unmarshal([]byte(out), &set); err != nil {
				t.Fatalf("schedule set %s --json: %q: %v", text, out, err)
			}
			want := fleet{text, before.Version + 1}
			if before.Schedule == text {
				want.Version = before.Version // nothing to change
			}
			if set != want || show() != want {
				t.Fatalf("schedule set %s: %+v, then show %+v; want %+v", text, set, show(), want)
			}
			before = want
		}
		// The notice protects what exists: a record (a quarantine) makes the
		// table used, so a near cutover is refused on every table store
		// (on an unused PostgreSQL table it would apply at once).
		cli(t, 0, with("leases", "quarantine", "1023")...)
		if _, errOut := cli(t, 1, with("schedule", "set", "v1,v2@"+time.Now().Add(time.Minute).UTC().Format(time.RFC3339))...); !strings.Contains(errOut, "pick a later cutover") {
			t.Errorf("a cutover a minute ahead: stderr %s", errOut)
		}
	})
}
