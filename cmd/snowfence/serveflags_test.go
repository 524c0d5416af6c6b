package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// serve's timing flags left unset take the chosen store's timings; the ones
// set stay.
func TestServeTimingsFromTheStore(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	kc := writeKubeconfig(t, t.TempDir(), "a", "https://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		args []string
		want lease.Timings
	}{
		{"etcd", nil, etcdstore.Timings()},
		{"postgres", []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x"}, pgstore.Timings()},
		{"dynamodb", []string{"--lease-store", "dynamodb"}, dynamostore.Timings()},
		{"zookeeper", []string{"--lease-store", "zookeeper", "--zk-servers", "127.0.0.1:1"}, zkstore.Timings()},
		{"kubernetes", []string{"--lease-store", "kubernetes", "--k8s-namespace", "ids", "--kubeconfig", kc}, k8sstore.Timings()},
		{"postgres, renewal set", []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x", "--renew-every", "20s"},
			lease.Timings{LeaseFor: 5 * time.Minute, RenewEvery: 20 * time.Second, SelfFence: pgstore.Timings().SelfFence, Margin: 5 * time.Second}},
	} {
		f, _, err := parseServeFlags(e, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := lease.Timings{LeaseFor: f.leaseTTL, RenewEvery: f.renewEvery, SelfFence: f.selfFence, Margin: f.fenceMargin}
		if got != tc.want {
			t.Errorf("%s: timings %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A timing flag given as 0 keeps the keeper's meaning of zero — no margin,
// or the keeper's default — and node.Start must not fill it with the
// store's: serve marks its timings as chosen.
func TestServeExplicitZeroTimingStays(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	f, _, err := parseServeFlags(e, []string{"--lease-store", "dynamodb", "--fence-margin", "0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.nodeConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keeper.Margin != 0 || !cfg.TimingsChosen {
		t.Fatalf("--fence-margin 0: keeper margin %s, timings chosen %v; want 0 and true", cfg.Keeper.Margin, cfg.TimingsChosen)
	}
	if want := dynamostore.Timings().LeaseFor; cfg.Keeper.LeaseFor != want {
		t.Fatalf("lease length %s, want the store's %s", cfg.Keeper.LeaseFor, want)
	}
}

// The embedded etcd's URLs must be loopback (it has no authentication) and
// mean nothing beside --etcd-endpoints: each is refused with the flag named.
func TestServeEmbeddedURLFlags(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		args []string
		want string // in the error; empty: accepted
	}{
		{[]string{"--embedded-etcd-url", "http://127.0.0.1:0", "--embedded-etcd-peer-url", "http://127.0.0.1:0"}, ""},
		{[]string{"--embedded-etcd-peer-url", "http://10.0.0.1:2380"}, "--embedded-etcd-peer-url"},
		{[]string{"--embedded-etcd-url", "http://10.0.0.1:2379"}, "--embedded-etcd-url"},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379", "--embedded-etcd-peer-url", "http://127.0.0.1:0"}, "no effect with --etcd-endpoints"},
	} {
		f, _, err := parseServeFlags(e, tc.args)
		if err == nil {
			_, err = f.nodeConfig(log)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want accepted", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// --high-water-file and --high-water-at reach the embedded etcd: the file
// named (default: beside --data-dir) is where the node's keeper keeps its
// high-water mark, and --high-water-at raises it before etcd starts,
// writing the file anew. They are refused with another store, and a time
// that does not parse is refused naming the flag.
func TestServeHighWaterFlags(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"--high-water-at", "yesterday"}, "--high-water-at"},
		{[]string{"--high-water-at", "now+-1m"}, "--high-water-at"},
		{[]string{"--etcd-endpoints", "http://127.0.0.1:2379", "--high-water-file", "x"}, "no effect with another store"},
		{[]string{"--lease-store", "dynamodb", "--high-water-at", "now"}, "no effect with another store"},
	} {
		f, _, err := parseServeFlags(e, tc.args)
		if err == nil {
			_, err = f.nodeConfig(log)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}

	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	for _, tc := range []struct {
		name, file string // file: --high-water-file, empty for none
		want       string // where the keeper's mark is kept
	}{
		{"default", "", dataDir + embedetcd.HighWaterSuffix},
		{"given", filepath.Join(root, "elsewhere", "hw"), filepath.Join(root, "elsewhere", "hw")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.MkdirAll(filepath.Dir(tc.want), 0o700)
			args := []string{"--data-dir", dataDir, "--embedded-etcd-url", "http://127.0.0.1:0", "--high-water-at", "2030-01-01T00:00:00Z"}
			if tc.file != "" {
				args = append(args, "--high-water-file", tc.file)
			}
			f, _, err := parseServeFlags(e, args)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := f.nodeConfig(log)
			if err != nil {
				t.Fatal(err)
			}
			o, err := cfg.Open(t.Context(), 0, log)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			p, ok := o.HighWater.(interface{ Path() string })
			if !ok || p.Path() != tc.want {
				t.Fatalf("the keeper's high-water mark is kept in %v, want %s", o.HighWater, tc.want)
			}
			ms, err := o.HighWater.Load()
			if want := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(); err != nil || ms != want {
				t.Errorf("high-water mark %d, %v; want --high-water-at's %d", ms, err, want)
			}
		})
	}
}

// --clock-policy left empty leaves the generator's policy to the node —
// require with a shared store, warn with the embedded etcd (node's
// TestClockPolicyDefaultFollowsTheStore) — and --max-clock-error and
// --clock-jump-settle reach the generator.
func TestServeClockPolicyFlags(t *testing.T) {
	kc := writeKubeconfig(t, t.TempDir(), "a", "https://127.0.0.1:1")
	for _, tc := range []struct {
		name   string
		args   []string
		policy snowfence.ClockPolicy
		maxErr time.Duration
		settle time.Duration
		bad    bool
	}{
		{"defaults, postgres", []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x"}, "", 5 * time.Millisecond, 2 * time.Minute, false},
		{"defaults, embedded etcd", nil, "", 5 * time.Millisecond, 2 * time.Minute, false},
		{"defaults, zookeeper", []string{"--lease-store", "zookeeper", "--zk-servers", "127.0.0.1:1"}, "", 5 * time.Millisecond, 2 * time.Minute, false},
		{"defaults, kubernetes", []string{"--lease-store", "kubernetes", "--k8s-namespace", "ids", "--kubeconfig", kc}, "", 5 * time.Millisecond, 2 * time.Minute, false},
		{"set", []string{"--clock-policy", "warn", "--max-clock-error", "20ms", "--clock-jump-settle", "5m"}, snowfence.ClockWarn, 20 * time.Millisecond, 5 * time.Minute, false},
		{"unknown policy", []string{"--clock-policy", "sometimes"}, "", 0, 0, true},
		{"zero error bound", []string{"--max-clock-error", "0"}, "", 0, 0, true},
	} {
		e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
		f, _, err := parseServeFlags(e, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cfg, err := f.nodeConfig(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		g := cfg.Generator
		if g.ClockPolicy != tc.policy || g.MaxClockError != tc.maxErr || g.ClockJumpSettle != tc.settle {
			t.Errorf("%s: policy %q, max error %s, settle %s; want %q, %s, %s", tc.name, g.ClockPolicy, g.MaxClockError, g.ClockJumpSettle, tc.policy, tc.maxErr, tc.settle)
		}
	}
}

// TestServeHasNoTableBound: the binary operators run cannot shorten the
// lease tables' notice or restore window, which nothing in a table records
// (a process given a shorter one than its peers could issue beside a
// cut-off peer): there is no flag, and the test build's environment
// variables are ignored.
func TestServeHasNoTableBound(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	if _, _, err := parseServeFlags(e, []string{"--lease-store", "postgres", "--table-max-self-fence", "5s"}); err == nil {
		t.Error("--table-max-self-fence was accepted")
	}
	t.Setenv(testbound.EnvMaxSelfFence, "5s")
	t.Setenv(testbound.EnvMaxReserve, "12s")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f, _, err := parseServeFlags(e, []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x"})
	if err != nil {
		t.Fatal(err)
	}
	if b := f.store.pgConfig(log).TestBound; b != (testbound.Bound{}) {
		t.Errorf("pgstore.Config.TestBound %v with %s set, want none", b, testbound.EnvMaxSelfFence)
	}
	if b := f.store.dynamoConfig(log).TestBound; b != (testbound.Bound{}) {
		t.Errorf("dynamostore.Config.TestBound %v, want none", b)
	}
	if b := f.store.zkConfig(log).TestBound; b != (testbound.Bound{}) {
		t.Errorf("zkstore.Config.TestBound %v, want none", b)
	}
	if b := f.store.k8s.config(0, log).TestBound; b != (testbound.Bound{}) {
		t.Errorf("k8sstore.Config.TestBound %v, want none", b)
	}
}

// --max-conns and --max-conns-per-peer (or their environment variables)
// configure the service's connection caps, and nothing else; zero leaves
// the service's defaults.
func TestServeConnCapFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		env            map[string]string
		conns, perPeer int
	}{
		{"defaults", nil, nil, 0, 0},
		{"flags", []string{"--max-conns", "5000", "--max-conns-per-peer", "300"}, nil, 5000, 300},
		{"environment", nil, map[string]string{"SNOWFENCE_MAX_CONNS": "700", "SNOWFENCE_MAX_CONNS_PER_PEER": "70"}, 700, 70},
	} {
		e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
		f, fs, err := parseServeFlags(e, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cfg, err := f.config(e, fs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.service.MaxConns != tc.conns || cfg.service.MaxConnsPerPeer != tc.perPeer {
			t.Errorf("%s: MaxConns %d, MaxConnsPerPeer %d; want %d, %d", tc.name, cfg.service.MaxConns, cfg.service.MaxConnsPerPeer, tc.conns, tc.perPeer)
		}
	}
}
