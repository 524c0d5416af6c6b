package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease/registry"
)

// snowfence regions add-copy on embedded etcds: a store named twice (two
// spellings of one cluster) is refused; a new region's store (another
// prefix) joins, every later change must name it, and a holder starts by
// name there; when a recorded name comes to reach another cluster, changes
// are refused, saying so.
func TestE2ERegionsJoinAndIdentity(t *testing.T) {
	t.Parallel()
	_, url1, _ := embeddedStore(t, "40")
	_, url2, s2 := embeddedStore(t, "40")
	host1, host2 := strings.TrimPrefix(url1, "http://"), strings.TrimPrefix(url2, "http://")
	flags1 := []string{"--etcd-endpoints", url1}
	copy2, copy3 := "etcd://"+host2+"/snowfence", "etcd://"+host2+"/joined"
	flags3 := []string{"--etcd-endpoints", url2, "--etcd-prefix", "/joined"}
	far := "v1,v2@2099-01-01T00:00:00Z"
	for _, f := range [][]string{flags1, {"--etcd-endpoints", url2}, flags3} {
		cli(t, 0, append([]string{"schedule", "set", far}, f...)...)
	}
	with := func(args ...string) []string { return append(append(args, flags1...), "--copy", copy2) }
	cli(t, 0, with("regions", "add", "us-east-1", "--create", "--home", "1")...)

	// Copy 1's cluster again, spelled another way.
	twice := "etcd://" + strings.Replace(host1, "127.0.0.1", "localhost", 1) + "/snowfence"
	if _, errOut := cli(t, 1, with("regions", "add-copy", twice)...); !strings.Contains(errOut, "are one store") {
		t.Errorf("add-copy of copy 1's store under another name: stderr %s; want it refused as one store", errOut)
	}
	out, _ := cli(t, 0, with("regions", "add-copy", copy3, "--json")...)
	var joined registry.Registry
	if err := json.Unmarshal([]byte(out), &joined); err != nil || joined.Version != 2 || len(joined.Copies) != 3 || len(joined.CopyIdentities) != 3 {
		t.Fatalf("add-copy --json: %s (%v); want version 2 recording three copies and their identities", out, err)
	}
	if _, errOut := cli(t, 1, with("regions", "add", "eu-west-1", "--home", "1")...); !strings.Contains(errOut, "kept in 3 copies") {
		t.Errorf("add without the joined copy: stderr %s; want it refused", errOut)
	}
	all := append(with("regions", "add", "eu-west-1", "--json", "--home", "3"), "--copy", copy3)
	out, _ = cli(t, 0, all...)
	var g registry.Region
	if err := json.Unmarshal([]byte(out), &g); err != nil || g.Number != 1 {
		t.Fatalf("add with the joined copy: %s (%v); want number 1", out, err)
	}
	// The joined store resolves us-east-1 by name (region 0: others start
	// only after the cutover to v2), but its home is copy 1: a holder on
	// the joined store is refused, one on copy 1's store starts.
	holder := []string{"--schedule", far, "--machines", "45-45", "--region", "us-east-1"}
	if _, errOut := cli(t, 1, append(append([]string{"serve", "--listen", "127.0.0.1:0"}, holder...), flags3...)...); !strings.Contains(errOut, "region us-east-1 (number 0) leases from copy") || !strings.Contains(errOut, "not the region's home") {
		t.Errorf("serve --region us-east-1 on the joined store, its home copy 1: stderr %s", errOut)
	}
	h := startService(t, t.TempDir(), append(holder, flags1...)...)
	h.stop(t)

	// copy2's address now reaches another cluster: a new embedded etcd on
	// the same client URL.
	s2.stop(t)
	// Its peer port is picked: the first one, url2 plus one, may have been
	// taken since.
	startService(t, t.TempDir(), "--machines", "40-40", "--embedded-etcd-url", url2, "--embedded-etcd-peer-url", "http://127.0.0.1:0")
	for _, args := range [][]string{
		append(with("regions", "add", "ap-south-1", "--home", "1"), "--copy", copy3),
		append(with("regions", "sync"), "--copy", copy3),
	} {
		if _, errOut := cli(t, 1, args...); !strings.Contains(errOut, "but the registry records it as") {
			t.Errorf("%s with copy 2 another cluster: stderr %s; want it refused as another store", args[1], errOut)
		}
	}
}
