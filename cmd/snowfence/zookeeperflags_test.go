package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/zkstore"
)

// --lease-store zookeeper takes its servers, session timeout, path and
// digest credentials from flags or their SNOWFENCE_* variables, and is
// refused before anything starts when the holder would reach no ensemble
// or a path the store cannot take: every such refusal is a usage error
// that names the flag.
func TestZooKeeperFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		servers []string
		timeout time.Duration
		path    string
		digest  string // user:password; empty: none
		refused string // in the error; empty: accepted
	}{
		{name: "flags", args: []string{"--zk-servers", "zk-1:2181, zk-2:2181,,zk-3:2181", "--zk-session-timeout", "6s", "--zk-path", "/ids/prod"},
			servers: []string{"zk-1:2181", "zk-2:2181", "zk-3:2181"}, timeout: 6 * time.Second, path: "/ids/prod"},
		{name: "defaults", args: []string{"--zk-servers", "127.0.0.1:2181"},
			servers: []string{"127.0.0.1:2181"}, timeout: 10 * time.Second, path: zkstore.DefaultPath},
		{name: "environment", env: map[string]string{"SNOWFENCE_ZK_SERVERS": "zk-1:2181", "SNOWFENCE_ZK_PATH": "/x", "SNOWFENCE_ZK_DIGEST": "fleet:s3cret", "SNOWFENCE_ZK_SESSION_TIMEOUT": "4s"},
			servers: []string{"zk-1:2181"}, timeout: 4 * time.Second, path: "/x", digest: "fleet:s3cret"},
		{name: "flag beats environment", args: []string{"--zk-servers", "a:1"}, env: map[string]string{"SNOWFENCE_ZK_SERVERS": "b:1"},
			servers: []string{"a:1"}, timeout: 10 * time.Second, path: zkstore.DefaultPath},
		{name: "digest", args: []string{"--zk-servers", "a:1", "--zk-digest", "fleet:pa:ss"},
			servers: []string{"a:1"}, timeout: 10 * time.Second, path: zkstore.DefaultPath, digest: "fleet:pa:ss"},
		{name: "no servers", refused: "--zk-servers"},
		{name: "only blanks", args: []string{"--zk-servers", " , "}, refused: "--zk-servers"},
		{name: "zero session timeout", args: []string{"--zk-servers", "a:1", "--zk-session-timeout", "0s"}, refused: "--zk-session-timeout"},
		{name: "digest without password", args: []string{"--zk-servers", "a:1", "--zk-digest", "fleet:"}, refused: "--zk-digest"},
		{name: "digest without colon", args: []string{"--zk-servers", "a:1", "--zk-digest", "fleet"}, refused: "--zk-digest"},
		{name: "relative path", args: []string{"--zk-servers", "a:1", "--zk-path", "snowfence"}, refused: "not absolute"},
		{name: "root path", args: []string{"--zk-servers", "a:1", "--zk-path", "/"}, refused: "root"},
		{name: "reserved path", args: []string{"--zk-servers", "a:1", "--zk-path", "/zookeeper/x"}, refused: "reserves"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
			f, fs, err := parseServeFlags(e, append([]string{"--lease-store", "zookeeper"}, tc.args...))
			if tc.refused != "" {
				var u usageError
				if err == nil || !errors.As(err, &u) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("got %v, want a usage error naming %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.store.zkServerList(); !slices.Equal(got, tc.servers) {
				t.Errorf("servers %q, want %q", got, tc.servers)
			}
			if f.store.zkSessionTimeout != tc.timeout {
				t.Errorf("session timeout %v, want %v", f.store.zkSessionTimeout, tc.timeout)
			}
			cfg := f.store.zkConfig(nil)
			if cfg.Path != tc.path {
				t.Errorf("path %q, want %q", cfg.Path, tc.path)
			}
			if tc.digest == "" {
				if cfg.ACL != nil || cfg.Auth != nil {
					t.Errorf("ACL %v, auth %v; want none (the store's default, open ACL)", cfg.ACL, cfg.Auth)
				}
			} else {
				user, password, _ := strings.Cut(tc.digest, ":")
				want := zkstore.Config{}.WithDigest(user, password)
				if !slices.Equal(cfg.ACL, want.ACL) || len(cfg.Auth) != 1 || cfg.Auth[0].Scheme != "digest" || string(cfg.Auth[0].Secret) != tc.digest {
					t.Errorf("ACL %v, auth %+v; want %v and digest %s", cfg.ACL, cfg.Auth, want.ACL, tc.digest)
				}
				if d := describeFlags(fs); strings.Contains(d, password) || !strings.Contains(d, "zk-digest=<redacted>") {
					t.Errorf("the start-up log shows the digest's password, or no redacted zk-digest: %s", d)
				}
			}
			if got := f.store.storeKind(); got.name != "zookeeper" || got.table || got.timings != zkstore.Timings() {
				t.Errorf("store kind %+v, want zookeeper: not a table, with zkstore.Timings", got)
			}
		})
	}
}

// leases init is the lease tables': on ZooKeeper it is a usage error that
// says nothing needs setting up, before anything is reached.
func TestZooKeeperNeedsNoInit(t *testing.T) {
	sf := storeFlags{}
	fs := flag.NewFlagSet("leases", flag.ContinueOnError)
	sf.register(fs)
	if err := fs.Parse([]string{"--lease-store", "zookeeper", "--zk-servers", "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	err := initTable(t.Context(), env{stdout: io.Discard, stderr: io.Discard}, &sf)
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "zookeeper need no set-up") {
		t.Fatalf("leases init on zookeeper: %v, want a usage error saying it needs no set-up", err)
	}
}

// --zk-servers without --lease-store zookeeper is refused: on the default
// store the holder would lease from an embedded etcd of its own and mint
// the fleet's IDs again.
func TestZooKeeperServersNeedTheStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--zk-servers", "zk-1:2181"}, nil},
		{"environment", nil, map[string]string{"SNOWFENCE_ZK_SERVERS": "zk-1:2181"}},
		{"another store", []string{"--lease-store", "dynamodb", "--zk-servers", "zk-1:2181"}, nil},
	} {
		e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
		_, _, err := parseServeFlags(e, tc.args)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "--lease-store zookeeper") {
			t.Errorf("%s: %v, want a usage error naming --lease-store zookeeper", tc.name, err)
		}
	}
}
