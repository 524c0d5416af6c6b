package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// --store is an alias of --lease-store (one value), and applyEnv fills
// every flag not on the command line from its SNOWFENCE_* variable: the
// alias's variable must not override the store named on the command line
// — with SNOWFENCE_STORE=etcd left in a host's environment, a holder given
// --lease-store postgres would otherwise lease from its own embedded etcd
// and mint the fleet's IDs again (a hostile review's finding). Two aliases'
// variables that disagree are refused.
func TestStoreAliasEnvNeverOverridesCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // the store serve takes; "" when it must refuse
	}{
		{"SNOWFENCE_STORE over --lease-store postgres",
			[]string{"--lease-store", "postgres", "--postgres-url", "postgres://u:p@db:5432/ids"},
			map[string]string{"SNOWFENCE_STORE": "etcd"}, "postgres"},
		{"SNOWFENCE_STORE over --lease-store dynamodb",
			[]string{"--lease-store", "dynamodb", "--aws-region", "eu-west-1"},
			map[string]string{"SNOWFENCE_STORE": "etcd"}, "dynamodb"},
		{"SNOWFENCE_LEASE_STORE over --store etcd",
			[]string{"--store", "etcd", "--etcd-endpoints", "http://etcd:2379"},
			map[string]string{"SNOWFENCE_LEASE_STORE": "dynamodb"}, "etcd"},
		{"both variables, one value",
			[]string{"--postgres-url", "postgres://u:p@db:5432/ids"},
			map[string]string{"SNOWFENCE_STORE": "postgres", "SNOWFENCE_LEASE_STORE": "postgres"}, "postgres"},
		{"both variables, two values",
			[]string{"--postgres-url", "postgres://u:p@db:5432/ids"},
			map[string]string{"SNOWFENCE_STORE": "etcd", "SNOWFENCE_LEASE_STORE": "postgres"}, ""},
	} {
		e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
		f, _, err := parseServeFlags(e, tc.args)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: accepted with store %q, want refused", tc.name, f.store.kind)
		case tc.want == "":
			t.Logf("%s: refused: %v", tc.name, err)
		case err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case f.store.kind != tc.want:
			t.Errorf("%s: serve takes store %q, not the %q the command line names", tc.name, f.store.kind, tc.want)
		}
	}
}

// A table store's address without its --lease-store is refused, as
// --zk-servers without zookeeper is (TestZooKeeperServersNeedTheStore): on
// the default store the holder would lease from an embedded etcd of its own
// and mint the fleet's IDs again (a hostile review's finding: each was
// accepted as etcd with no endpoints).
func TestTableStoreAddressesNeedTheirStore(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		args       []string
		env        map[string]string
	}{
		{"--postgres-url alone", "postgres", []string{"--postgres-url", "postgres://u:p@db:5432/ids"}, nil},
		{"SNOWFENCE_POSTGRES_URL alone", "postgres", nil, map[string]string{"SNOWFENCE_POSTGRES_URL": "postgres://u:p@db:5432/ids"}},
		{"--dynamodb-endpoint alone", "dynamodb", []string{"--dynamodb-endpoint", "http://127.0.0.1:8000"}, nil},
		{"--aws-region on etcd", "dynamodb", []string{"--aws-region", "eu-west-1", "--etcd-endpoints", "http://etcd:2379"}, nil},
		{"--postgres-url on dynamodb", "postgres", []string{"--lease-store", "dynamodb", "--postgres-url", "postgres://db/ids"}, nil},
	} {
		e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tc.env[k] }}
		_, _, err := parseServeFlags(e, tc.args)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "--lease-store "+tc.want) {
			t.Errorf("%s: %v, want a usage error naming --lease-store %s", tc.name, err, tc.want)
		}
	}
}
