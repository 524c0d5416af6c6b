package service_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/metrics"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/service"
)

// notGenerators says which of serve's metric families are not the
// generator's or its keeper's, and so not metrics.Collector's: the HTTP
// requests, connections and draining (package server and the service's
// listeners), the perimeter's callers and reloads, and the Go runtime and
// process collectors.
func notGenerators(name string) bool {
	for _, p := range []string{"go_", "process_", "promhttp_", "snowfence_http_", "snowfence_caller_", "snowfence_perimeter_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return name == "snowfence_draining"
}

// family is what a metric family declares: its type, its help and the
// names of its labels (over all its series, sorted).
type family struct {
	typ, help string
	labels    []string
}

func familyOf(mf *dto.MetricFamily) family {
	f := family{typ: mf.GetType().String(), help: mf.GetHelp()}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(f.labels, l.GetName()) {
				f.labels = append(f.labels, l.GetName())
			}
		}
	}
	slices.Sort(f.labels)
	return f
}

// An embedding service registers metrics.New on its own registry and gets
// exactly the generator's and keeper's series of serve's /metrics: the
// same names, types, help and labels. The service is built as serve builds
// it (service.New on the embedded etcd, its own registry), on v1,v2 with
// the cutover past and a region registry written, so that the region
// numbers are exported too; the embedder's collector is on the same node
// and reads the same registry.
func TestEmbedderMetricsAreServes(t *testing.T) {
	ctx := t.Context()
	text := "v1,v2@" + time.Now().Add(-time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	sched, err := snowfence.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := embedetcd.Start(ctx, embedetcd.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	st, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: etcd.Endpoints()}, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cur, err := st.FleetSchedule(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFleetSchedule(ctx, cur.Version, text); err != nil {
		t.Fatal(err)
	}
	written, err := registry.Update(ctx, []registry.Copy{{Name: "copy-a", Store: st}}, func(r registry.Registry) (registry.Registry, error) {
		next, _, err := r.WithRegionHome("a", "copy-a", 1, 8)
		next.Schedule = text
		return next, err
	})
	if err != nil {
		t.Fatal(err)
	}

	svc, err := service.New(ctx, service.Config{Region: "a", Node: node.Config{
		Open:      node.OnEmbedded(etcd, etcdstore.Config{}),
		Keeper:    lease.KeeperConfig{Range: &lease.Range{Lo: 1, Hi: 1}},
		Generator: snowfence.Config{Schedule: sched},
	}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go svc.Serve(api, admin)
	t.Cleanup(func() { svc.Shutdown(context.Background()) })
	select {
	case <-svc.Ready():
	case <-svc.Done():
		t.Fatalf("the service stopped: %v", svc.Err())
	case <-ctx.Done():
		t.Fatal("the service never became ready")
	}
	n := svc.Node()
	if _, err := n.Generator.Next(ctx); err != nil {
		t.Fatal(err)
	}

	// The embedder's: the collector alone on a registry of its own.
	reg := prometheus.NewRegistry()
	c, err := metrics.New(metrics.Config{Generator: n.Generator, Keeper: n.Keeper,
		RegionNumbers: func() (int, int) { return metrics.RegionNumbers(n.Keeper.Schedule(), written) }})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]family{}
	for _, mf := range mfs {
		embedded[mf.GetName()] = familyOf(mf)
	}

	// serve's: GET /metrics on the admin listener.
	resp, err := http.Get("http://" + admin.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("serve's /metrics: %v", err)
	}
	served := map[string]family{}
	for name, mf := range parsed {
		if !notGenerators(name) {
			served[name] = familyOf(mf)
		}
	}

	// Every series serve and the embedder both should have here (the
	// clock's depend on the host, the next layout's on a cutover near):
	// a comparison of two empty sets would prove nothing.
	for _, name := range []string{"snowfence_ids_issued_total", "snowfence_refusals_total", "snowfence_issuing", "snowfence_fence_remaining_seconds",
		"snowfence_generator_info", "snowfence_layout_timestamps_end_seconds", "snowfence_region_numbers_left", "snowfence_region_numbers",
		"snowfence_lease_state", "snowfence_lease_info", "snowfence_lease_mark_timestamp_seconds", "snowfence_lease_last_renewal_timestamp_seconds"} {
		if _, ok := served[name]; !ok {
			t.Errorf("serve's /metrics lacks %s: the fixture no longer exports it", name)
		}
	}
	for name, e := range embedded {
		s, ok := served[name]
		switch {
		case !ok:
			t.Errorf("%s: the embedder's collector exports it, serve's /metrics does not (or counts it as not the generator's)", name)
		case s.typ != e.typ || s.help != e.help || !slices.Equal(s.labels, e.labels):
			t.Errorf("%s differs:\n serve:    %s %v %q\n embedder: %s %v %q", name, s.typ, s.labels, s.help, e.typ, e.labels, e.help)
		}
	}
	for name := range served {
		if _, ok := embedded[name]; !ok {
			t.Errorf("%s: serve's /metrics exports it, the embedder's collector does not; define it in package metrics, or, if it is not the generator's or its keeper's, in notGenerators", name)
		}
	}
}
