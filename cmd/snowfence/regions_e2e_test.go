package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// registryOn connects to the etcd at url and returns its region registry
// copy.
func registryOn(t *testing.T, url string) registry.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: []string{url}}, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// embeddedHolderPrefix is the prefix embeddedStore's own holder leases under.
const embeddedHolderPrefix = "/embedded-holder"

// embeddedStore starts serve on machine number machine with an embedded
// etcd in a directory of its own, and returns the directory, the embedded
// etcd's client URL and the service: a lease store a test can name as a
// region's. The serve's own holder leases under another prefix
// (embeddedHolderPrefix), so that the store's default prefix, which the
// tests name as a region's copy, holds no lease of region 0: a region
// numbered 0 homed on another store is refused while one does (holders
// that ran there as region 0 would mint beside it).
func embeddedStore(t *testing.T, machine string) (dir, url string, s *service) {
	t.Helper()
	dir = t.TempDir()
	s = startService(t, dir, "--machines", machine+"-"+machine, "--etcd-prefix", embeddedHolderPrefix)
	url, err := embedetcd.ReadClientURL(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, url, s
}

// serve --region resolves the name or number in the registry of its own
// store: a retired or unknown region refuses to start, saying which
// command fixes it; a region in service starts, by name.
func TestE2EServeRegionRefusal(t *testing.T) {
	t.Parallel()
	_, url, _ := embeddedStore(t, "40")
	rs := registryOn(t, url)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	for _, name := range []string{"us-east-1", "eu-west-1"} {
		if _, err := registry.AddRegion(ctx, []registry.Copy{{Name: "copy-rs", Store: rs}}, name, now, 8); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := registry.RetireRegion(ctx, []registry.Copy{{Name: "copy-rs", Store: rs}}, "eu-west-1", now); err != nil {
		t.Fatal(err)
	}
	serve := func(region string) []string {
		return []string{"serve", "--listen", "127.0.0.1:0", "--etcd-endpoints", url, "--machines", "41-41", "--region", region}
	}
	for _, c := range []struct{ region, want string }{
		{"eu-west-1", "snowfence regions list"},
		{"1", "was retired"},
		{"ap-south-9", "snowfence regions add"},
		{"5", "not in the region registry"},
	} {
		if _, errOut := cli(t, 1, serve(c.region)...); !strings.Contains(errOut, c.want) {
			t.Errorf("serve --region %s: stderr %s; want it to say %q", c.region, errOut, c.want)
		}
	}
	startService(t, t.TempDir(), "--etcd-endpoints", url, "--machines", "42-42", "--region", "us-east-1")
}

// tryCLI runs the binary with args and returns its exit status, stdout and
// stderr.
func tryCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return tryCLIEnv(t, nil, args...)
}

// tryCLIEnv is tryCLI with env added to the binary's environment.
func tryCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// regionsList is the part of regions list --json the tests read.
type regionsList struct {
	Version int64             `json:"version"`
	Regions []registry.Region `json:"regions"`
	Layout  string            `json:"layout"`
	Left    int               `json:"region_numbers_left"`
	Copies  []copyVersion     `json:"copies"`
}

// regionsCLI runs snowfence regions on two copies, flags naming copy 1
// and copy the --copy SPEC of copy 2, as the tests of every store do: add
// is refused under v1; two regions are added under the lowest numbers,
// one retired (with --yes only), every copy written; serve on copy 2's
// store (serve2, its flags) refuses the retired region by name and starts
// in the one in service.
func regionsCLI(t *testing.T, flags []string, copy string, serve2 []string) {
	with := func(args ...string) []string { return append(append(args, flags...), "--copy", copy) }
	list := func() regionsList {
		t.Helper()
		out, _ := cli(t, 0, with("regions", "list", "--json")...)
		var l regionsList
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("regions list --json: %q: %v", out, err)
		}
		return l
	}
	if l := list(); l.Version != 0 || len(l.Regions) != 0 || len(l.Copies) != 2 || l.Layout != "v1" {
		t.Fatalf("fresh stores: %+v", l)
	}
	if _, errOut := cli(t, 1, with("regions", "add", "us-east-1")...); !strings.Contains(errOut, "no region bits") {
		t.Errorf("add under v1: stderr %s", errOut)
	}
	far := "v1,v2@2099-01-01T00:00:00Z"
	cli(t, 0, append([]string{"schedule", "set", far}, flags...)...)
	cli(t, 0, append([]string{"schedule", "set", far}, serve2...)...)
	for i, name := range []string{"us-east-1", "eu-west-1"} {
		out, _ := cli(t, 0, with("regions", "add", name, "--json", "--create", "--home", "2")...)
		var g registry.Region
		if err := json.Unmarshal([]byte(out), &g); err != nil || g.Name != name || g.Number != i {
			t.Fatalf("regions add %s --json: %q, %v; want number %d", name, out, err, i)
		}
	}
	if _, errOut := cli(t, 2, with("regions", "add", "ap-south-1")...); !strings.Contains(errOut, "--home COPY") {
		t.Errorf("add with two copies and no --home: stderr %s; want it asked for", errOut)
	}
	cli(t, 1, with("regions", "add", "eu-west-1", "--home", "2")...) // exists already
	cli(t, 2, with("regions", "retire", "eu-west-1")...)
	cli(t, 0, with("regions", "retire", "eu-west-1", "--yes")...)
	l := list()
	if l.Version != 3 || len(l.Regions) != 2 || !l.Regions[1].Retired() || l.Left != 6 || len(l.Copies) != 2 || !l.Copies[1].Same || l.Copies[1].Version != 3 {
		t.Fatalf("after two adds and a retire: %+v", l)
	}
	if l.Regions[0].Home != l.Copies[1].Store {
		t.Errorf("us-east-1 added with --home 2: home %q; want copy 2's name %q", l.Regions[0].Home, l.Copies[1].Store)
	}
	if out, _ := cli(t, 0, with("regions", "list")...); !strings.Contains(out, "eu-west-1") || !strings.Contains(out, l.Copies[1].Store) || !strings.Contains(out, "registry version 3, in 2 copies") || !strings.Contains(out, "6 of 8") {
		t.Errorf("regions list:\n%s", out)
	}
	if out, _ := cli(t, 0, with("regions", "sync")...); !strings.Contains(out, "at version 3") {
		t.Errorf("regions sync: %s", out)
	}
	serve := func(region string) []string {
		return append([]string{"serve", "--listen", "127.0.0.1:0", "--schedule", far, "--machines", "45-45", "--region", region}, serve2...)
	}
	if _, errOut := cli(t, 1, serve("eu-west-1")...); !strings.Contains(errOut, "retired") {
		t.Errorf("serve --region eu-west-1 (retired) on copy 2's store: stderr %s", errOut)
	}
	// us-east-1's home is copy 2: on copy 1's store (which resolves it
	// too) its holder is refused.
	elsewhere := append([]string{"serve", "--listen", "127.0.0.1:0", "--schedule", far, "--machines", "45-45", "--region", "us-east-1"}, flags...)
	elsewhere = append(elsewhere, tableBound(flags)...) // the tests' table bound, as startService adds it
	if _, errOut := cli(t, 1, elsewhere...); !strings.Contains(errOut, "not the region's home") || !strings.Contains(errOut, "leases from copy "+l.Copies[1].Store) {
		t.Errorf("serve --region us-east-1 on copy 1's store, its home copy 2: stderr %s", errOut)
	}
	s := startService(t, t.TempDir(), serve("us-east-1")[1:]...)
	s.stop(t)
}

// snowfence regions on two etcd clusters (two serves' embedded etcds).
func TestE2ERegionsCLI(t *testing.T) {
	t.Parallel()
	_, url1, _ := embeddedStore(t, "40")
	_, url2, _ := embeddedStore(t, "40")
	registryOn(t, url1)
	regionsCLI(t, []string{"--etcd-endpoints", url1}, "etcd://"+strings.TrimPrefix(url2, "http://")+"/snowfence", []string{"--etcd-endpoints", url2})
}

// snowfence regions on two PostgreSQL tables and two DynamoDB tables,
// fresh ones each run.
func TestE2ERegionsTableStores(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows on the lease tables: beside the other such tests
	suffix := fmt.Sprint(time.Now().UnixNano())
	stores := []struct {
		name, env string
		flags     func(v, table string) []string
		copy      func(v, table string) string
	}{
		{"postgres", "SNOWFENCE_TEST_POSTGRES_URL",
			func(v, table string) []string {
				return []string{"--lease-store", "postgres", "--postgres-url", v, "--postgres-table", table}
			},
			func(v, table string) string {
				if strings.Contains(v, "?") {
					return v + "&table=" + table
				}
				return v + "?table=" + table
			}},
		{"dynamodb", "SNOWFENCE_TEST_DYNAMODB_ENDPOINT",
			func(v, table string) []string {
				return []string{"--lease-store", "dynamodb", "--dynamodb-endpoint", v, "--dynamodb-table", table, "--aws-region", "us-east-1"}
			},
			func(v, table string) string { return "dynamodb://" + table + "?aws-region=us-east-1&endpoint=" + v }},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel() // a table of its own; most of it waits out the claims' notice windows
			v := os.Getenv(st.env)
			if v == "" {
				testenv.Missing(t, fmt.Sprintf("%s is not set: start the server with scripts/services/%s.sh start (scripts/test does)", st.env, map[string]string{"postgres": "postgres", "dynamodb": "dynalite"}[st.name]))
			}
			a, b := "e2e_regions_a_"+suffix, "e2e_regions_b_"+suffix
			if st.name == "dynamodb" {
				a, b = strings.ReplaceAll(a, "_", "-"), strings.ReplaceAll(b, "_", "-")
			}
			cli(t, 0, append([]string{"leases", "init"}, st.flags(v, a)...)...)
			cli(t, 0, append([]string{"leases", "init"}, st.flags(v, b)...)...)
			regionsCLI(t, st.flags(v, a), st.copy(v, b), st.flags(v, b))
		})
	}
}

// snowfence decode --from-store names the region from the registry of the
// store the flags name: the v2 example decodes to eu-west-1, a number the
// registry does not know to an empty name and a warning.
func TestE2EDecodeFromStore(t *testing.T) {
	t.Parallel()
	_, url, _ := embeddedStore(t, "41")
	reg := registry.Registry{Version: 1, Regions: []registry.Region{
		{Name: "us-east-1", Number: 0, CreatedMs: 1}, {Name: "ap-south-1", Number: 1, CreatedMs: 1}, {Name: "eu-west-1", Number: 2, CreatedMs: 1},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := registryOn(t, url).SetRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--from-store", "--schedule", "v2", "--etcd-endpoints", url, "--json"}
	out, _ := cli(t, 0, append([]string{"decode", "683244571854022659"}, flags...)...)
	want := `{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"eu-west-1","region_number":2,"machine":170,"sequence":3}`
	if strings.TrimSpace(out) != want {
		t.Errorf("decode --from-store:\n got %s\nwant %s", out, want)
	}
	out, _ = cli(t, 0, append([]string{"decode", "683244571855595523"}, flags...)...)
	var d struct {
		Region       string `json:"region"`
		RegionNumber int    `json:"region_number"`
		Warning      string `json:"warning"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Region != "" || d.RegionNumber != 5 || d.Warning == "" {
		t.Errorf("decode of an unregistered region number: %s (%v), want region \"\", number 5 and a warning", out, err)
	}
}

// The region registry records the fleet schedule: regions add records the
// stores' one; schedule set --copy changes every store and the registry
// (and, naming fewer copies, is refused); serve refuses a --schedule that
// differs from the registry's, and a store whose record missed a change,
// until schedule set finishes it.
func TestE2ERegistrySchedule(t *testing.T) {
	t.Parallel()
	_, url1, _ := embeddedStore(t, "40")
	_, url2, _ := embeddedStore(t, "40")
	flags := []string{"--etcd-endpoints", url1}
	copy2 := "etcd://" + strings.TrimPrefix(url2, "http://") + "/snowfence"
	serve2 := []string{"--etcd-endpoints", url2}
	with := func(args ...string) []string { return append(append(args, flags...), "--copy", copy2) }
	rs1, rs2 := registryOn(t, url1), registryOn(t, url2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schedules := func() (string, string) {
		t.Helper()
		r1, err1 := rs1.Registry(ctx)
		r2, err2 := rs2.Registry(ctx)
		if err1 != nil || err2 != nil || !r1.Equal(r2) {
			t.Fatalf("registry copies %+v (%v) and %+v (%v); want them equal", r1, err1, r2, err2)
		}
		f1, err1 := rs1.(lease.Admin).FleetSchedule(ctx)
		f2, err2 := rs2.(lease.Admin).FleetSchedule(ctx)
		if err1 != nil || err2 != nil || f1.Text != f2.Text {
			t.Fatalf("store records %+v (%v) and %+v (%v); want them equal", f1, err1, f2, err2)
		}
		return r1.Schedule, f1.Text
	}

	far, later, other := "v1,v2@2099-01-01T00:00:00Z", "v1,v2@2099-06-01T00:00:00Z", "v1,v2@2099-09-01T00:00:00Z"
	// Without a registry nothing keeps two stores' records one: a change
	// naming both is refused; each store alone may be set.
	if _, errOut := cli(t, 1, with("schedule", "set", far)...); !strings.Contains(errOut, "no region registry") {
		t.Errorf("schedule set on two stores without a registry: stderr %s", errOut)
	}
	out, _ := cli(t, 0, append([]string{"schedule", "set", far}, flags...)...)
	if _, err := lease.SetSchedule(ctx, rs2.(lease.Admin), far, time.Now(), 0); err != nil {
		t.Fatalf("set copy 2's record alone: %v (after %s)", err, out)
	}
	if reg, rec := schedules(); reg != "" || rec != far {
		t.Fatalf("after schedule set without a registry: registry %q, records %q; want none and %q", reg, rec, far)
	}
	cli(t, 0, with("regions", "add", "us-east-1", "--create", "--home", "2")...)
	if reg, rec := schedules(); reg != far || rec != far {
		t.Fatalf("after regions add: registry %q, records %q; want %q in both", reg, rec, far)
	}
	if out, _ := cli(t, 0, with("regions", "list")...); !strings.Contains(out, "fleet schedule: "+far) {
		t.Errorf("regions list does not show the recorded schedule:\n%s", out)
	}

	out, _ = cli(t, 0, with("schedule", "set", later, "--json")...)
	var set struct {
		Schedule        string         `json:"schedule"`
		Version         int64          `json:"version"`
		Copies          []scheduleCopy `json:"copies"`
		RegistryVersion int64          `json:"registry_version"`
	}
	if err := json.Unmarshal([]byte(out), &set); err != nil || set.Schedule != later || set.Version != 2 || len(set.Copies) != 2 || set.RegistryVersion != 2 {
		t.Fatalf("schedule set --copy --json: %s (%v); want %q at version 2 in both copies, registry version 2", out, err, later)
	}
	if reg, rec := schedules(); reg != later || rec != later {
		t.Fatalf("after schedule set --copy: registry %q, records %q; want %q in both", reg, rec, later)
	}
	if _, errOut := cli(t, 1, append([]string{"schedule", "set", other}, flags...)...); !strings.Contains(errOut, "kept in 2 copies") {
		t.Errorf("schedule set naming one copy of two: stderr %s", errOut)
	}
	if reg, rec := schedules(); reg != later || rec != later {
		t.Fatalf("after the refused schedule set: registry %q, records %q; want %q left", reg, rec, later)
	}

	serve := func(schedule string) []string {
		return append([]string{"serve", "--listen", "127.0.0.1:0", "--schedule", schedule, "--machines", "45-45", "--region", "us-east-1"}, serve2...)
	}
	if _, errOut := cli(t, 1, serve(far)...); !strings.Contains(errOut, "restart it with --schedule '"+later+"'") || !strings.Contains(errOut, "snowfence schedule set") {
		t.Errorf("serve with a --schedule the registry does not record: stderr %s", errOut)
	}

	// Copy 2's store misses a change: its record differs from the registry.
	st2 := rs2.(lease.Admin)
	cur, err := st2.FleetSchedule(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st2.SetFleetSchedule(ctx, cur.Version, other); err != nil {
		t.Fatal(err)
	}
	for _, schedule := range []string{later, other} {
		if _, errOut := cli(t, 1, serve(schedule)...); !strings.Contains(errOut, "snowfence schedule set '"+later+"'") || !strings.Contains(errOut, "snowfence regions sync") {
			t.Errorf("serve --schedule %s on a store whose record missed the change: stderr %s", schedule, errOut)
		}
	}
	if out, errOut := cli(t, 0, append([]string{"schedule", "show"}, serve2...)...); !strings.Contains(out, "registry  "+later) || !strings.Contains(errOut, "warning") {
		t.Errorf("schedule show on the store that missed the change:\nstdout %s\nstderr %s", out, errOut)
	}
	// schedule set run again finishes it; serve starts.
	cli(t, 0, with("schedule", "set", later)...)
	if reg, rec := schedules(); reg != later || rec != later {
		t.Fatalf("after schedule set again: registry %q, records %q; want %q in both", reg, rec, later)
	}
	s := startService(t, t.TempDir(), serve(later)[1:]...)
	s.stop(t)
}
