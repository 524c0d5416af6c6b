package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

func TestParseCopySpec(t *testing.T) {
	base := storeFlags{cert: "c.pem", key: "k.pem", ca: "ca.pem", dialTimeout: 3 * time.Second,
		k8s: k8sFlags{kubeconfig: kubeconfigFlag{environ: "/home/op/.kube/eu"}}}
	for _, c := range []struct {
		spec string
		want storeFlags
	}{
		{"etcd://h1:2379,h2:2379/fleet/eu", storeFlags{kind: "etcd", endpoints: "http://h1:2379,http://h2:2379", prefix: "/fleet/eu", dialTimeout: 3 * time.Second}},
		{"etcd://h1:2379", storeFlags{kind: "etcd", endpoints: "http://h1:2379", prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"etcds://ops:s%40cret@h1:2379/p/", storeFlags{kind: "etcd", endpoints: "https://h1:2379", prefix: "/p", username: "ops", password: "s@cret",
			cert: "c.pem", key: "k.pem", ca: "ca.pem", dialTimeout: 3 * time.Second}},
		{"postgres://u:p@db:5432/ids?sslmode=disable&table=eu_leases", storeFlags{kind: "postgres", postgresURL: "postgres://u:p@db:5432/ids?sslmode=disable",
			postgresTable: "eu_leases", prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"postgresql://db/ids", storeFlags{kind: "postgres", postgresURL: "postgresql://db/ids", postgresTable: "idgen_leases", prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"dynamodb://eu-leases?aws-region=eu-west-1&endpoint=http://127.0.0.1:4567", storeFlags{kind: "dynamodb", dynamoTable: "eu-leases", awsRegion: "eu-west-1",
			dynamoEndpoint: "http://127.0.0.1:4567", prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"dynamodb://eu-leases", storeFlags{kind: "dynamodb", dynamoTable: "eu-leases", prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"zookeeper://zk-1:2181,zk-2:2181/fleet/eu/", storeFlags{kind: "zookeeper", zkServers: "zk-1:2181,zk-2:2181", zkPath: "/fleet/eu",
			zkSessionTimeout: 10 * time.Second, prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"zookeeper://fleet:s%40cret@zk-1:2181", storeFlags{kind: "zookeeper", zkServers: "zk-1:2181", zkPath: "/snowfence", zkDigest: "fleet:s@cret",
			zkSessionTimeout: 10 * time.Second, prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"kubernetes://ids", storeFlags{kind: "kubernetes", k8s: k8sFlags{namespace: "ids", kubeconfig: base.k8s.kubeconfig},
			prefix: "/snowfence", dialTimeout: 3 * time.Second}},
		{"kubernetes://ids/eu-fleet/?context=eu", storeFlags{kind: "kubernetes", k8s: k8sFlags{namespace: "ids", prefix: "eu-fleet", context: "eu",
			kubeconfig: base.k8s.kubeconfig}, prefix: "/snowfence", dialTimeout: 3 * time.Second}},
	} {
		got, err := parseCopySpec(c.spec, base)
		if err != nil || got != c.want {
			t.Errorf("parseCopySpec(%q) = %+v, %v\nwant %+v", c.spec, got, err, c.want)
		}
	}
	for _, spec := range []string{"h1:2379", "consul://x", "etcd://", "etcd://h1:2379,", "dynamodb://?aws-region=x", "dynamodb://t?region=x", "etcd://:pw@h:1",
		"zookeeper://", "zookeeper://zk-1:2181,", "zookeeper://fleet@zk-1:2181", "zookeeper://:pw@zk-1:2181",
		"kubernetes://", "kubernetes:///p", "kubernetes://ids/a/b", "kubernetes://ids?ctx=x", "kubernetes://u@ids", "kubernetes://ids:443"} {
		_, err := parseCopySpec(spec, base)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "the forms are") {
			t.Errorf("parseCopySpec(%q): %v; want a usage error listing the forms", spec, err)
		}
	}
	for _, spec := range []string{"consul://ops:hunter2@x", "zookeeper://ops:hunter2@"} {
		_, err := parseCopySpec(spec, base)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("a bad SPEC's error shows its password: %v", err)
		}
	}
	zk := storeFlags{kind: "zookeeper", zkServers: "zk-1:2181, zk-2:2181", zkPath: "/fleet", zkDigest: "fleet:hunter2"}
	if d := zk.describe(); d != "zookeeper zk-1:2181,zk-2:2181, path /fleet" {
		t.Errorf("describe() = %q, want the servers and the path, no digest", d)
	}
}

// regionsOn is a regions command on n in-memory copies, under the fleet
// schedule sched.
func regionsOn(n int, sched string) (regionsRun, []*registrytest.Mem, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	r := regionsRun{e: env{stdout: &out, stderr: &errb}, fleet: lease.FleetSchedule{Text: sched, Version: 1},
		now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), create: true}
	var ms []*registrytest.Mem
	for i := range n {
		m := &registrytest.Mem{}
		ms = append(ms, m)
		r.copies = append(r.copies, registryCopy{name: "copy-" + string(rune('a'+i)), store: &leasetest.RegistryStore{Mem: m, Fleet: r.fleet}})
	}
	return r, ms, &out, &errb
}

// The first add creates the registry only when asked (--create): a store
// with no registry named alone — a new region's, not joined — would
// otherwise start a second registry that hands out number 0 again (a
// reviewer's sequence).
func TestRegionsAddCreatesOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	r, ms, _, _ := regionsOn(1, "v2")
	r.create = false
	if err := r.add(ctx, "ap-south-1"); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "add-copy") {
		t.Fatalf("add on a store with no registry, without --create: %v, want ErrInvalid naming add-copy", err)
	}
	if reg, _ := ms[0].Registry(ctx); reg.Version != 0 {
		t.Fatalf("the refused add wrote %+v", reg)
	}
	r.create = true
	if err := r.add(ctx, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	r.create = false
	if err := r.add(ctx, "eu-west-1"); err != nil {
		t.Fatalf("a later add, the registry existing: %v", err)
	}
}

// add and retire write every copy; list prints the table and its footer;
// add is refused under a layout without region bits, and when no number
// is left.
func TestRegionsCommands(t *testing.T) {
	ctx := context.Background()
	r, ms, out, errb := regionsOn(2, "v1,v2@2029-01-01T00:00:00Z")
	// With two copies, the home is the operator's to say: by name or by
	// number, one of the copies given.
	for _, home := range []string{"", "3", "0", "copy-c"} {
		r.home = home
		var ue usageError
		if err := r.add(ctx, "us-east-1"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "1 copy-a, 2 copy-b") {
			t.Errorf("add with --home %q: %v; want a usage error naming the copies", home, err)
		}
	}
	if ms[0].Reg.Version != 0 {
		t.Fatalf("a refused add wrote %+v", ms[0].Reg)
	}
	for i, name := range []string{"us-east-1", "eu-west-1", "ap-south-1"} {
		r.home = []string{"2", "copy-a", "copy-b"}[i]
		out.Reset()
		if err := r.add(ctx, name); err != nil {
			t.Fatal(err)
		}
		home := []string{"copy-b", "copy-a", "copy-b"}[i]
		if g, _ := ms[1].Reg.Named(name); g.Home != home {
			t.Errorf("add %s --home %s: home %q recorded, want %q", name, r.home, g.Home, home)
		}
		want := "region " + name + " added as number " + string(rune('0'+i)) + ", written to 2 copies: start its holders with --region " + name + " on its home store, copy " + home + "\n"
		if out.String() != want {
			t.Errorf("add %s: %q, want %q", name, out, want)
		}
	}
	if err := r.add(ctx, "eu-west-1"); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("adding eu-west-1 twice: %v", err)
	}
	out.Reset()
	if err := r.retire(ctx, "eu-west-1"); err != nil || !strings.Contains(out.String(), "never used again") {
		t.Fatalf("retire: %v, %q", err, out)
	}
	if err := r.retire(ctx, "eu-west-1"); !errors.Is(err, registry.ErrRegionRetired) {
		t.Errorf("retiring twice: %v", err)
	}
	if !ms[0].Reg.Equal(ms[1].Reg) || ms[0].Reg.Version != 4 {
		t.Fatalf("copies %+v and %+v; want both at version 4", ms[0].Reg, ms[1].Reg)
	}

	out.Reset()
	errb.Reset() // retire's plan: list itself writes nothing there
	if err := r.list(ctx); err != nil {
		t.Fatal(err)
	}
	want := `NAME        NUMBER  CREATED                   RETIRED                   HOME
us-east-1   0       2030-01-02T03:04:05.000Z  -                         copy-b
eu-west-1   1       2030-01-02T03:04:05.000Z  2030-01-02T03:04:05.000Z  copy-a
ap-south-1  2       2030-01-02T03:04:05.000Z  -                         copy-b

registry version 4, in 2 copies
  copy 1: copy-a (version 4)
  copy 2: copy-b (version 4)
region numbers left: 5 of 8 (layout v2, the fleet schedule's last; retired numbers are never reused)
fleet schedule: v1,v2@2029-01-01T00:00:00Z (the registry's and copy 1's store's)
timestamps run out at 2095-09-07T15:47:35.552Z (layout v2: its epoch + 2^41 ticks)
`
	if ms[0].Reg.Schedule != "v1,v2@2029-01-01T00:00:00Z" {
		t.Errorf("the registry records the schedule %q, want the stores'", ms[0].Reg.Schedule)
	}
	if out.String() != want || errb.Len() != 0 {
		t.Errorf("list:\n%s\nwant\n%s\nstderr %q", out, want, errb)
	}

	r.asJSON = true
	out.Reset()
	if err := r.list(ctx); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Version           int64             `json:"version"`
		Regions           []registry.Region `json:"regions"`
		Layout            string            `json:"layout"`
		RegionNumbers     int               `json:"region_numbers"`
		RegionNumbersLeft int               `json:"region_numbers_left"`
		TimestampsEnd     time.Time         `json:"timestamps_end"`
		Copies            []copyVersion     `json:"copies"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("list --json: %q: %v", out, err)
	}
	if rep.Version != 4 || len(rep.Regions) != 3 || rep.Layout != "v2" || rep.RegionNumbers != 8 || rep.RegionNumbersLeft != 5 ||
		!rep.TimestampsEnd.Equal(time.Date(2095, 9, 7, 15, 47, 35, 552e6, time.UTC)) || len(rep.Copies) != 2 || !rep.Copies[1].Same {
		t.Errorf("list --json: %+v", rep)
	}

	// A change that stopped half way: list warns, add is refused, sync
	// mends it.
	// Copy 2 missed the last change, the retirement of eu-west-1.
	prev := ms[0].Reg
	prev.Version, prev.Regions = 3, slices.Clone(prev.Regions)
	for i := range prev.Regions {
		if prev.Regions[i].Name == "eu-west-1" {
			prev.Regions[i].RetiredMs = 0
		}
	}
	ms[1].Set(prev)
	out.Reset()
	if err := r.list(ctx); err != nil || !strings.Contains(errb.String(), "run snowfence regions sync") {
		t.Errorf("list with copies apart: %v; stderr %q", err, errb)
	}
	r.asJSON = false
	out.Reset()
	if err := r.sync(ctx); err != nil || out.String() != "every copy of the registry (2) is at version 4\n" || !ms[1].Reg.Equal(ms[0].Reg) {
		t.Errorf("sync: %v, %q; copy 2 %+v", err, out, ms[1].Reg)
	}

	// Five numbers left: the sixth add finds none.
	for _, name := range []string{"r-3", "r-4", "r-5", "r-6", "r-7"} {
		if err := r.add(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.add(ctx, "r-8"); !errors.Is(err, registry.ErrNoRegionNumber) {
		t.Errorf("a ninth region under v2: %v, want ErrNoRegionNumber", err)
	}
}

// Under v1, the schedule's only layout, list says there are no region
// bits and add is refused.
func TestRegionsNoRegionBits(t *testing.T) {
	ctx := context.Background()
	r, ms, out, _ := regionsOn(1, "v1")
	if err := r.add(ctx, "us-east-1"); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "no region bits") {
		t.Errorf("add under v1: %v", err)
	}
	if ms[0].Reg.Version != 0 {
		t.Errorf("add under v1 wrote the registry: %+v", ms[0].Reg)
	}
	if err := r.list(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no regions registered", "registry version 0 (never written), in 1 copy", "region numbers left: no region bits (layout v1", "2095-09-07T15:47:35.552Z"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list under v1 lacks %q:\n%s", want, out)
		}
	}
}

// The command's arguments: retire wants --yes; bad names and verbs are
// usage errors (exit 2), before any store is opened.
func TestRegionsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"regions"},
		{"regions", "frobnicate"},
		{"regions", "add"},
		{"regions", "add", "EU"},
		{"regions", "add", "2"},
		{"regions", "list", "x"},
		{"regions", "retire", "eu-west-1"},
		{"regions", "list", "--copy", "consul://x"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and an error", args, code, out, errOut)
		}
	}
	if _, _, errOut := runCLI(t, "regions", "retire", "eu-west-1"); !strings.Contains(errOut, "--yes") {
		t.Errorf("retire without --yes: %q", errOut)
	}
}

// A DynamoDB copy must name its AWS region: the registry records copies by
// name, and a name that leaves the region to AWS_REGION means another
// table on another host. Refused before any store is opened.
func TestRegionsDynamoCopyNamesItsRegion(t *testing.T) {
	first := storeFlags{kind: "dynamodb", dynamoTable: "leases", dynamoEndpoint: "http://127.0.0.1:1"}
	cs, err := openCopies(context.Background(), first, nil)
	closeCopies(cs)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--aws-region") || len(cs) != 0 {
		t.Fatalf("dynamodb copy without an AWS region: %v (%d opened); want a usage error naming --aws-region", err, len(cs))
	}
	_, err = openCopies(context.Background(), storeFlags{kind: "etcd", endpoints: "http://127.0.0.1:1"}, []string{"dynamodb://leases?endpoint=http://127.0.0.1:1"})
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "aws-region") {
		t.Fatalf("--copy dynamodb without aws-region: %v; want a usage error", err)
	}
}

// The first change records the fleet schedule the copies' stores keep, and
// is refused, naming schedule set, while they keep different ones; a
// registry that records one keeps it.
func TestRegionsAddRecordsSchedule(t *testing.T) {
	ctx := context.Background()
	far := "v1,v2@2029-01-01T00:00:00Z"
	r, ms, _, _ := regionsOn(2, far)
	r.home = "1"
	r.copies[1].store.(*leasetest.RegistryStore).Fleet = lease.FleetSchedule{Text: "v1,v2@2029-06-01T00:00:00Z", Version: 2}
	if err := r.add(ctx, "us-east-1"); !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set SCHEDULE naming every copy") {
		t.Fatalf("add with the stores on two schedules: %v; want ErrSchedule naming schedule set", err)
	}
	if ms[0].Reg.Version != 0 || ms[1].Reg.Version != 0 {
		t.Fatalf("registry written on a refusal: %+v, %+v", ms[0].Reg, ms[1].Reg)
	}
	r.copies[1].store.(*leasetest.RegistryStore).Fleet = r.fleet
	if err := r.add(ctx, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	if ms[0].Reg.Schedule != far || !ms[0].Reg.Equal(ms[1].Reg) {
		t.Fatalf("registry after add: %+v and %+v; want %q recorded in both", ms[0].Reg, ms[1].Reg, far)
	}
	// Recorded: a later change keeps it even if a store's record moved.
	r.copies[1].store.(*leasetest.RegistryStore).Fleet = lease.FleetSchedule{Text: "v1", Version: 3}
	if err := r.add(ctx, "eu-west-1"); err != nil || ms[1].Reg.Schedule != far {
		t.Fatalf("second add: %v, schedule %q; want %q kept", err, ms[1].Reg.Schedule, far)
	}
}

// Issue 25, path 2: a store whose fleet schedule record is not the one the
// registry records could not run the registry's regions without two
// layouts in force at one instant, yet add-copy joined it with a warning
// and add --home made it a region's home without a look. Both now refuse,
// naming the command that sets the record, and write nothing.
func TestRegionsRefuseStoreOffRegistrySchedule(t *testing.T) {
	ctx := context.Background()
	recorded, other := "v1,v2@2029-01-01T00:00:00Z", "v1,v2@2028-06-01T00:00:00Z"
	r, ms, _, errb := regionsOn(2, recorded)
	r.home = "1"
	if err := r.add(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	before := ms[0].Reg
	r.copies[1].store.(*leasetest.RegistryStore).Fleet = lease.FleetSchedule{Text: other, Version: 2}
	r.home = "copy-b"
	err := r.add(ctx, "b")
	if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "copy copy-b") || !strings.Contains(err.Error(), "snowfence schedule set '"+recorded+"'") {
		t.Fatalf("add b --home copy-b, whose store keeps %s, the registry recording %s: %v; want ErrSchedule naming copy-b and snowfence schedule set '%s'",
			other, recorded, err, recorded)
	}
	if !ms[0].Reg.Equal(before) || !ms[1].Reg.Equal(before) {
		t.Fatalf("the refused add wrote %+v, %+v", ms[0].Reg, ms[1].Reg)
	}

	joining := &leasetest.RegistryStore{Mem: &registrytest.Mem{}, Fleet: lease.FleetSchedule{Text: other, Version: 1}}
	r.copies[1].store.(*leasetest.RegistryStore).Fleet = r.fleet
	err = r.addCopy(ctx, registryCopy{name: "copy-j", store: joining})
	if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "copy copy-j") || !strings.Contains(err.Error(), "snowfence schedule set '"+recorded+"'") {
		t.Fatalf("add-copy of a store keeping %s, the registry recording %s: %v; want ErrSchedule naming copy-j and snowfence schedule set '%s'",
			other, recorded, err, recorded)
	}
	if joining.Mem.Reg.Version != 0 || !ms[0].Reg.Equal(before) {
		t.Fatalf("the refused add-copy wrote %+v (joining), %+v", joining.Mem.Reg, ms[0].Reg)
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %s; want nothing (a refusal, not a warning)", errb)
	}
	joining.Fleet = r.fleet
	if err := r.addCopy(ctx, registryCopy{name: "copy-j", store: joining}); err != nil {
		t.Fatalf("add-copy once the store keeps the registry's schedule: %v", err)
	}
}

// add --number takes the number given when no region ever had it, retired
// regions included, and it is within the layout's region numbers; without
// --number, add takes the lowest number no region ever had, as before,
// and skips numbers given. A refused add writes nothing.
func TestRegionsAddNumber(t *testing.T) {
	ctx := context.Background()
	r, ms, out, _ := regionsOn(2, "v2") // 3 region bits: numbers 0-7
	r.home = "1"
	add := func(name string, number int) error {
		t.Helper()
		r.number, r.numbered = number, number != noNumber
		out.Reset()
		return r.add(ctx, name)
	}
	for _, c := range []struct {
		name           string
		number, wantAs int
	}{{"us-east-1", noNumber, 0}, {"eu-west-1", 2, 2}, {"ap-south-1", noNumber, 1}, {"sa-east-1", noNumber, 3}, {"me-south-1", 7, 7}} {
		if err := add(c.name, c.number); err != nil {
			t.Fatalf("add %s (number %d): %v", c.name, c.number, err)
		}
		if want := "region " + c.name + " added as number " + string(rune('0'+c.wantAs)) + ","; !strings.HasPrefix(out.String(), want) {
			t.Errorf("add %s (number %d): %q, want it to begin %q", c.name, c.number, out, want)
		}
		for i, m := range ms {
			if g, _ := m.Reg.Named(c.name); g.Number != c.wantAs {
				t.Errorf("copy %d records %s as number %d, want %d", i+1, c.name, g.Number, c.wantAs)
			}
		}
	}
	if err := r.retire(ctx, "sa-east-1"); err != nil {
		t.Fatal(err)
	}
	before := ms[0].Reg
	for _, c := range []struct {
		number int
		says   string
	}{
		{2, "number 2 was given to region eu-west-1"},
		{3, "number 3 was given to region sa-east-1 (retired"},
		{8, "outside 0-7"},
	} {
		if err := add("af-south-1", c.number); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("add af-south-1 --number %d: %v; want ErrInvalid saying %q", c.number, err, c.says)
		}
	}
	if !ms[0].Reg.Equal(before) || !ms[1].Reg.Equal(before) {
		t.Errorf("refused adds wrote the registry: %+v, %+v; was %+v", ms[0].Reg, ms[1].Reg, before)
	}
}

// The --number flag: a number of the layout's range, refused when
// negative or given to another verb.
func TestRegionsNumberFlag(t *testing.T) {
	for _, args := range [][]string{
		{"add", "eu-west-1", "--number", "-1"},
		{"add", "eu-west-1", "--number", "x"},
		{"list", "--number", "2"},
		{"retire", "eu-west-1", "--yes", "--number", "2"},
	} {
		var out, errb bytes.Buffer
		err := runRegions(context.Background(), env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, args)
		if !errors.As(err, new(usageError)) {
			t.Errorf("regions %v: %v; want a usage error", args, err)
		}
	}
	// Taken: the command goes on to the store (here none: a data
	// directory with no running serve).
	var out, errb bytes.Buffer
	args := []string{"add", "eu-west-1", "--number", "2", "--data-dir", t.TempDir()}
	err := runRegions(context.Background(), env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}, args)
	if err == nil || errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "no etcd to talk to") {
		t.Errorf("regions %v: %v; want the flags taken and the store looked for", args, err)
	}
}

// retire says what it will do, and is refused while the region's home
// store shows a live holder in any layout's keyspace of its number — a
// retirement cannot be undone, and refuses every later serve of the
// region — unless --despite-live-holders; an expired or quarantined
// record is no live holder. A region whose home store is not among the
// copies given is refused too (its holders cannot be read).
func TestRegionsRetireLiveHolders(t *testing.T) {
	ctx := context.Background()
	r, ms, _, errb := regionsOn(1, "v1,v2@2029-01-01T00:00:00Z")
	for _, name := range []string{"us-east-1", "eu-west-1"} {
		if err := r.add(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	ks, err := lease.KeyspaceOf(1, 0) // us-east-1's numbers under v2
	if err != nil {
		t.Fatal(err)
	}
	nowMs := r.now.UnixMilli()
	st := r.copies[0].store.(*leasetest.RegistryStore)
	st.Records = map[int][]lease.Record{ks: {
		{Machine: 36, Holder: "vm/pid-1/1", Token: 1, ExpiresMs: nowMs - 1},         // expired
		{Machine: 38, Holder: "quarantine", Token: 4, Quarantined: true},            // no holder's
		{Machine: 37, Holder: "vm/pid-31694/1796156126000", Token: 2, ExpiresMs: 0}, // live (etcd: no expiry kept)
	}}
	version := ms[0].Reg.Version
	err = r.retire(ctx, "us-east-1")
	if err == nil || !strings.Contains(err.Error(), "1 live holder") || !strings.Contains(err.Error(), "--despite-live-holders") {
		t.Fatalf("retire with a live holder: %v; want a refusal naming it and --despite-live-holders", err)
	}
	if ms[0].Reg.Version != version {
		t.Fatalf("the refused retire wrote the registry: %+v", ms[0].Reg)
	}
	for _, want := range []string{"retiring region us-east-1 (number 0)", "for ever", "layout v2 (keyspace 65536) machine 37: vm/pid-31694/1796156126000 (token 2)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("retire's plan lacks %q:\n%s", want, errb)
		}
	}
	if strings.Contains(errb.String(), "machine 36") || strings.Contains(errb.String(), "machine 38") {
		t.Errorf("retire's plan lists an expired or quarantined record as a live holder:\n%s", errb)
	}
	t.Logf("operator sees:\n%s%v", errb, err)
	// No live holder: retired, the plan said first.
	errb.Reset()
	if err := r.retire(ctx, "eu-west-1"); err != nil || !strings.Contains(errb.String(), "live holders on its home store (copy-a): none") {
		t.Errorf("retire of a region with no live holder: %v, plan %q", err, errb)
	}
	errb.Reset()
	r.despiteLive = true
	if err := r.retire(ctx, "us-east-1"); err != nil || !strings.Contains(errb.String(), "despite") {
		t.Errorf("retire --despite-live-holders: %v, plan %q", err, errb)
	}
	if g, _ := ms[0].Reg.Named("us-east-1"); !g.Retired() {
		t.Errorf("us-east-1 after retire --despite-live-holders: %+v", g)
	}

	// The home store not given: its holders cannot be read.
	r2, ms2, _, _ := regionsOn(2, "v1,v2@2029-01-01T00:00:00Z")
	r2.home = "copy-b"
	if err := r2.add(ctx, "us-east-1"); err != nil {
		t.Fatal(err)
	}
	r2.copies = r2.copies[:1]
	if err := r2.retire(ctx, "us-east-1"); err == nil || !strings.Contains(err.Error(), "--copy") {
		t.Errorf("retire without the home copy: %v; want a refusal asking for it with --copy", err)
	}
	if g, _ := ms2[0].Reg.Named("us-east-1"); g.Retired() {
		t.Errorf("retired without reading the home store: %+v", g)
	}
}
