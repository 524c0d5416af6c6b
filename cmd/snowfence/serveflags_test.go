package main

import (
	"io"
	"testing"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// serve's timing flags left unset take the chosen store's timings; the ones
// set stay.
func TestServeTimingsFromTheStore(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	for _, tc := range []struct {
		name string
		args []string
		want lease.Timings
	}{
		{"etcd", nil, etcdstore.Timings()},
		{"postgres", []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x"}, pgstore.Timings()},
		{"dynamodb", []string{"--lease-store", "dynamodb"}, dynamostore.Timings()},
		{"postgres, renewal set", []string{"--lease-store", "postgres", "--postgres-url", "postgres://127.0.0.1:1/x", "--renew-every", "20s"},
			lease.Timings{LeaseFor: 5 * time.Minute, RenewEvery: 20 * time.Second, SelfFence: 30 * time.Second, Margin: 5 * time.Second}},
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
