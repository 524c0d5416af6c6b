package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
)

// healthReply is the part of a health answer the tests read.
type healthReply struct {
	Error  struct{ Code, Reason, Message string }
	Ready  bool
	Health struct {
		Status, Reason, Detail string
		Machine                int
	}
}

func decodeHealth(t *testing.T, r reply) healthReply {
	t.Helper()
	var h healthReply
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatalf("health body %q: %v", r.body, err)
	}
	return h
}

// A spare waits: serve B starts while serve A holds the only machine number
// of the range, listens, answers /readyz 503 starting (reason
// no-free-number, the claim's error as detail) and refuses to mint; once A
// is stopped (and releases the number), B claims it, becomes ready and
// mints above every ID A issued. B serves its health on an admin listener.
func TestE2ESpareWaits(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	store := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}
	a := startService(t, t.TempDir(), append(store, "--machines", "5-5")...)
	r := call(t, "POST", a.url+"/v1/ids?count=10", "", "")
	var batch struct{ IDs []snowfence.ID }
	if err := json.Unmarshal([]byte(r.body), &batch); r.status != http.StatusOK || err != nil || len(batch.IDs) != 10 {
		t.Fatalf("A: POST: %d %s", r.status, r.body)
	}

	b := startService(t, t.TempDir(), append(store, "--machines", "5-5", "--admin-listen", "127.0.0.1:0", "--log-level", "info")...)
	if b.admin == "" {
		t.Fatal("B printed no admin line")
	}
	r = call(t, "GET", b.admin+"/readyz", "", "")
	h := decodeHealth(t, r)
	if r.status != http.StatusServiceUnavailable || h.Error.Code != "starting" || h.Error.Reason != "no-free-number" ||
		h.Health.Status != "starting" || h.Health.Reason != "no-free-number" || !strings.Contains(h.Health.Detail, "no free machine number") {
		t.Fatalf("B waiting: /readyz %d %s; want 503 starting, no-free-number, the claim's error", r.status, r.body)
	}
	if r := call(t, "GET", b.admin+"/healthz", "", ""); r.status != http.StatusServiceUnavailable {
		t.Errorf("B waiting: /healthz %d, want 503", r.status)
	}
	r = call(t, "POST", b.url+"/v1/ids", "", "")
	if e := decodeHealth(t, r); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || e.Error.Code != "starting" {
		t.Errorf("B waiting: POST /v1/ids %d (Retry-After %q) %s; want 503 starting with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	if r := call(t, "GET", b.admin+"/metrics", "", ""); r.status != http.StatusOK || !strings.Contains(r.body, "go_goroutines") {
		t.Errorf("B waiting: /metrics %d, want 200 with the process's metrics", r.status)
	}

	a.stop(t) // releases machine 5
	ready := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second) // the backoff is at most 5 s
	for polls := 0; !ready && polls < 300; polls++ {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("B not ready 30 s after A stopped; last /readyz: %s\n%s", call(t, "GET", b.admin+"/readyz", "", "").body, b.stderr)
		}
		r := call(t, "GET", b.admin+"/readyz", "", "")
		ready = r.status == http.StatusOK && decodeHealth(t, r).Ready
	}
	if !ready {
		t.Fatalf("B not ready after 300 polls\n%s", b.stderr)
	}
	r = call(t, "POST", b.url+"/v1/ids", "application/json", `{}`)
	var one struct{ ID snowfence.ID }
	if err := json.Unmarshal([]byte(r.body), &one); r.status != http.StatusOK || err != nil {
		t.Fatalf("B ready: POST /v1/ids: %d %s", r.status, r.body)
	}
	if d, _ := snowfence.Decode(one.ID); d.Machine != 5 || one.ID <= batch.IDs[9] {
		t.Errorf("B minted %d (machine %d); want machine 5, above A's last %d", one.ID, d.Machine, batch.IDs[9])
	}
	b.stop(t)
	if !strings.Contains(b.stderr.String(), "waiting for one to free") || !strings.Contains(b.stderr.String(), "a machine number freed") {
		t.Errorf("B logged no wait and claim:\n%s", b.stderr)
	}
}

// A spare stopped while it waits exits cleanly: it held nothing.
func TestE2ESpareStoppedWhileWaiting(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	store := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}
	a := startService(t, t.TempDir(), append(store, "--machines", "6-6")...)
	b := startService(t, t.TempDir(), append(store, "--machines", "6-6", "--log-level", "info")...)
	if r := call(t, "GET", b.url+"/readyz", "", ""); r.status != http.StatusServiceUnavailable {
		t.Fatalf("B: /readyz %d, want 503 while A holds the number", r.status)
	}
	b.stop(t) // fails unless B exits 0
	if !strings.Contains(b.stderr.String(), "nothing to release") {
		t.Errorf("B's stop says nothing of the wait:\n%s", b.stderr)
	}
	// A still holds and mints.
	if r := call(t, "POST", a.url+"/v1/ids", "", ""); r.status != http.StatusOK {
		t.Errorf("A after B stopped: POST %d %s", r.status, r.body)
	}
	a.stop(t)
}

// --admin-listen (here through SNOWFENCE_ADMIN_LISTEN): health, readiness
// and metrics only on the admin listener, everything else only on the main
// one; the other listener answers 404 not_found.
func TestE2EAdminListener(t *testing.T) {
	t.Setenv("SNOWFENCE_ADMIN_LISTEN", "127.0.0.1:0")
	s := startService(t, t.TempDir(), "--machines", "38-38")
	if s.admin == "" || s.admin == s.url {
		t.Fatalf("admin URL %q, main %q: want a listener of its own", s.admin, s.url)
	}
	for _, tc := range []struct {
		method, path, ctype, body string
		onAdmin                   bool
	}{
		{"POST", "/v1/ids", "", "", false},
		{"POST", "/v1/ids", "application/json", "{}", false},
		{"POST", "/v1/ids:batch", "application/json", `{"count":3}`, false},
		{"GET", "/v1/ids/97301141913751557/decode", "", "", false},
		{"GET", "/openapi.json", "", "", false},
		{"GET", "/healthz", "", "", true},
		{"GET", "/readyz", "", "", true},
		{"GET", "/metrics", "", "", true},
	} {
		served, other := s.url, s.admin
		if tc.onAdmin {
			served, other = s.admin, s.url
		}
		if r := call(t, tc.method, served+tc.path, tc.ctype, tc.body); r.status != http.StatusOK {
			t.Errorf("%s %s where served: %d %.200s", tc.method, tc.path, r.status, r.body)
		}
		r := call(t, tc.method, other+tc.path, tc.ctype, tc.body)
		var e struct{ Error struct{ Code string } }
		if err := json.Unmarshal([]byte(r.body), &e); r.status != http.StatusNotFound || err != nil || e.Error.Code != "not_found" {
			t.Errorf("%s %s on the other listener: %d %.200s; want 404 not_found", tc.method, tc.path, r.status, r.body)
		}
	}
	// The IDs minted on the main listener show in the admin's metrics.
	if v := metricValue(t, s.admin, "snowfence_ids_issued_total"); v == "0" {
		t.Errorf("snowfence_ids_issued_total = %s on the admin listener after minting", v)
	}
	s.stop(t)
}
