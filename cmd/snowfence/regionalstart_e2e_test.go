package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
)

// TestE2ERegionalStartFromCLI starts a regional (v2) fleet on a brand-new
// store with the CLI alone, as an operator following docs/regions.md
// would: schedule set v2 applies at once on a store that holds no lease
// record; a registry of three regions gives eu-west-1 the number 2 it has
// elsewhere (--number), added between two regions numbered in order;
// serve --region eu-west-1 --schedule v2 mints on machine 170; and the
// issue's ID 683244571854022659 (2031-03-01, region 2, machine 170,
// sequence 3) decodes as eu-west-1 / 2 / 170 / 3 both through snowfence
// decode and through GET /v1/ids/{id}/decode — there with an in_future
// warning, since the server's clock reads 2026. Once a holder exists,
// the notice rule is back, and its refusal names the holder.
func TestE2ERegionalStartFromCLI(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	store := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}
	with := func(args ...string) []string { return append(args, store...) }

	// The schedule: at once, on a store that holds nothing.
	out, _ := cli(t, 0, with("schedule", "set", "v2", "--json")...)
	var set struct {
		Schedule string `json:"schedule"`
		Version  int64  `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &set); err != nil || set.Schedule != "v2" || set.Version != 1 {
		t.Fatalf("schedule set v2 on a new store: %q, %v; want v2 at version 1", out, err)
	}

	// The registry: us-east-1 next (0), eu-west-1 given 2, ap-south-1
	// next (1); 2 cannot be given twice, nor 8 under v2's 3 region bits.
	cli(t, 0, with("regions", "add", "us-east-1", "--create")...)
	if out, _ := cli(t, 0, with("regions", "add", "eu-west-1", "--number", "2")...); !strings.Contains(out, "added as number 2") {
		t.Errorf("regions add eu-west-1 --number 2: %q", out)
	}
	cli(t, 0, with("regions", "add", "ap-south-1")...)
	if _, errOut := cli(t, 1, with("regions", "add", "af-south-1", "--number", "2")...); !strings.Contains(errOut, "was given to region eu-west-1") {
		t.Errorf("regions add af-south-1 --number 2: stderr %q", errOut)
	}
	if _, errOut := cli(t, 1, with("regions", "add", "af-south-1", "--number", "8")...); !strings.Contains(errOut, "outside 0-7") {
		t.Errorf("regions add af-south-1 --number 8: stderr %q", errOut)
	}
	out, _ = cli(t, 0, with("regions", "list", "--json")...)
	var reg regionsList
	if err := json.Unmarshal([]byte(out), &reg); err != nil {
		t.Fatalf("regions list --json: %q: %v", out, err)
	}
	got := map[string]int{}
	for _, g := range reg.Regions {
		got[g.Name] = g.Number
	}
	if want := map[string]int{"us-east-1": 0, "ap-south-1": 1, "eu-west-1": 2}; len(got) != len(want) || got["us-east-1"] != 0 || got["ap-south-1"] != 1 || got["eu-west-1"] != 2 {
		t.Fatalf("regions list: %v, want %v", got, want)
	}

	// A holder of eu-west-1 on machine 170, minting over HTTP.
	s := startService(t, t.TempDir(), with("--schedule", "v2", "--region", "eu-west-1", "--machines", "170-170")...)
	ids := mintUntilReady(t, s, 5, 60*time.Second)
	v2, err := snowfence.ParseSchedule("v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		d, err := v2.Decode(id)
		if err != nil || d.RegionNumber != 2 || d.Machine != 170 {
			t.Errorf("minted %s decodes as %+v, %v; want region 2, machine 170", id, d, err)
		}
	}
	if _, errOut := cli(t, 1, with("schedule", "set", "v1")...); !strings.Contains(errOut, "1 holder") {
		t.Errorf("schedule set v1 with a holder running: stderr %q; want the notice rule naming 1 holder", errOut)
	}

	// The issue's ID, through the CLI and over HTTP.
	const issueID = "683244571854022659"
	type decoded struct {
		ID           string `json:"id"`
		Layout       string `json:"layout"`
		CreatedAt    string `json:"created_at"`
		Region       string `json:"region"`
		RegionNumber int    `json:"region_number"`
		Machine      int    `json:"machine"`
		Sequence     int    `json:"sequence"`
		Warnings     []struct {
			Code string `json:"code"`
		} `json:"warnings"`
	}
	want := decoded{ID: issueID, Layout: "v2", CreatedAt: "2031-03-01T09:30:00.000Z", Region: "eu-west-1", RegionNumber: 2, Machine: 170, Sequence: 3}
	check := func(how, body string, future bool) {
		t.Helper()
		var d decoded
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("%s: %q: %v", how, body, err)
		}
		warned := len(d.Warnings) == 1 && d.Warnings[0].Code == "in_future"
		d.Warnings = nil
		if d.ID != want.ID || d.Layout != want.Layout || d.CreatedAt != want.CreatedAt || d.Region != want.Region ||
			d.RegionNumber != want.RegionNumber || d.Machine != want.Machine || d.Sequence != want.Sequence || warned != future {
			t.Errorf("%s: %s\nwant %+v (an in_future warning: %v)", how, body, want, future)
		}
	}
	out, _ = cli(t, 0, with("decode", issueID, "--from-store", "--json")...)
	check("snowfence decode --from-store --json", out, false)
	if out, _ := cli(t, 0, with("decode", issueID, "--from-store")...); !strings.Contains(out, "eu-west-1") || !strings.Contains(out, "170") {
		t.Errorf("snowfence decode --from-store: %q; want eu-west-1 and machine 170", out)
	}
	r := call(t, "GET", s.url+"/v1/ids/"+issueID+"/decode", "", "")
	if r.status != 200 {
		t.Fatalf("GET /v1/ids/%s/decode: %d %s; want 200", issueID, r.status, r.body)
	}
	check("GET /v1/ids/"+issueID+"/decode", r.body, true)
}
