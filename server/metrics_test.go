package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

func TestMetricsExposition(t *testing.T) {
	ls := &fixedStatus{s: lease.Status{State: lease.StateHeld, Machine: 37, Holder: "host/1/2", Claims: 1,
		MarkMs: exampleTime.Add(5 * time.Second).UnixMilli(), LastRenewal: exampleTime,
		Next: &lease.Status{State: lease.StateClaiming, Layout: "v2", Machine: -1}}}
	f := newFixture(t, func(c *snowfence.Config) {
		c.ClockPolicy = snowfence.ClockWarn
		c.ClockStatus = func() (snowfence.ClockStatus, error) {
			return snowfence.ClockStatus{Synchronized: true, EstimatedError: time.Millisecond, MaxError: 3 * time.Millisecond}, nil
		}
	}, func(c *Config) { c.Lease = ls })
	f.post("/v1/ids", "")
	f.post("/v1/ids:batch", `{"count":10}`)
	f.post("/v1/ids:batch", `{"count":0}`)
	f.do(req{target: "/nope"})
	r := f.do(req{target: "/metrics"})
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	for _, want := range []string{
		"snowfence_ids_issued_total 11",
		`snowfence_refusals_total{reason="fenced"} 0`,
		"snowfence_sequence_waits_total",
		"snowfence_backward_waits_total",
		"snowfence_clock_forward_jumps_total",
		"snowfence_clock_backward_steps_total",
		"snowfence_issuing 1",
		"snowfence_fence_remaining_seconds +Inf",
		`snowfence_generator_info{layout="v1",machine="37",region="0"} 1`,
		"snowfence_clock_synchronized 1",
		"snowfence_clock_estimated_error_seconds 0.001",
		"snowfence_clock_max_error_seconds 0.003",
		"snowfence_clock_offset_seconds",
		`snowfence_lease_state{state="held"} 1`,
		`snowfence_lease_state{state="fenced"} 0`,
		`snowfence_lease_info{holder="host/1/2",machine="37",region="0"} 1`,
		"snowfence_lease_claims_total 1",
		"snowfence_lease_losses_total 0",
		"snowfence_lease_renew_failures_total 0",
		"snowfence_lease_mark_timestamp_seconds",
		"snowfence_lease_last_renewal_timestamp_seconds",
		`snowfence_lease_next_state{layout="v2",state="claiming"} 1`,
		`snowfence_lease_next_state{layout="v2",state="held"} 0`,
		`snowfence_http_requests_total{code="200",endpoint="/v1/ids"} 1`,
		`snowfence_http_requests_total{code="200",endpoint="/v1/ids:batch"} 1`,
		`snowfence_http_requests_total{code="400",endpoint="/v1/ids:batch"} 1`,
		`snowfence_http_requests_total{code="404",endpoint="unmatched"} 1`,
		`snowfence_http_request_duration_seconds_bucket{endpoint="/v1/ids",le="0.001"}`,
		`snowfence_http_request_duration_seconds_count{endpoint="/v1/ids:batch"} 2`,
		"snowfence_draining 0",
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", r.body)
	}
}

func TestMetricsRefusals(t *testing.T) {
	f := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, nil)
	f.post("/v1/ids", "")
	f.post("/v1/ids", "")
	r := f.do(req{target: "/metrics"})
	for _, want := range []string{
		`snowfence_refusals_total{reason="fenced"} 2`,
		"snowfence_issuing 0",
		`snowfence_http_requests_total{code="503",endpoint="/v1/ids"} 2`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	// No lease, no lease or fence series.
	for _, absent := range []string{"snowfence_fence_remaining_seconds ", "snowfence_lease_state", "snowfence_clock_synchronized"} {
		if strings.Contains(r.body, absent) {
			t.Errorf("exposition has %q", absent)
		}
	}
}

func TestMetricsRegistries(t *testing.T) {
	gen, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(1, 0), ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	// Own registry, with the Go collector.
	s, err := New(Config{Generator: gen})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: s, h: s.Handler()}
	if body := f.do(req{target: "/metrics"}).body; !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "snowfence_ids_issued_total") {
		t.Errorf("own registry: exposition lacks go_goroutines or snowfence_ids_issued_total")
	}
	// Two servers on their own registries coexist: nothing global.
	if _, err := New(Config{Generator: gen}); err != nil {
		t.Errorf("second server on its own registry: %v", err)
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "snowfence_") {
			t.Errorf("%s is on the global default registry", mf.GetName())
		}
	}
	// One registry twice: the second registration fails.
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Generator: gen, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Generator: gen, Registerer: reg}); err == nil {
		t.Error("second server on one registry: no error")
	}
	// A New that fails part way leaves the registry as it was.
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "snowfence_draining", Help: "x"}))
	if _, err := New(Config{Generator: gen, Registerer: clash}); err == nil {
		t.Fatal("New over a clashing metric: no error")
	}
	if err := clash.Register(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "snowfence_http_requests_total", Help: "HTTP requests by endpoint (path pattern) and status code."}, []string{"endpoint", "code"})); err != nil {
		t.Errorf("a failed New left its request counter registered: %v", err)
	}
	// A Registerer that cannot gather needs a Gatherer.
	if _, err := New(Config{Generator: gen, Registerer: wrapRegisterer{reg}}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("Registerer without Gatherer: err = %v, want ErrInvalidConfig", err)
	}
	// A Gatherer alone is merged with the server's own registry.
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "x"}))
	s, err = New(Config{Generator: gen, Gatherer: other})
	if err != nil {
		t.Fatal(err)
	}
	f = &fixture{t: t, srv: s, h: s.Handler()}
	if body := f.do(req{target: "/metrics"}).body; !strings.Contains(body, "other_total") || !strings.Contains(body, "snowfence_ids_issued_total") {
		t.Errorf("Gatherer only: exposition lacks other_total or snowfence_ids_issued_total")
	}
}

type wrapRegisterer struct{ prometheus.Registerer }

func TestNewErrors(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("New without generator: err = %v, want ErrInvalidConfig", err)
	}
	gen, _ := snowfence.New(snowfence.Config{Lease: snowfence.Static(1, 0), ClockPolicy: snowfence.ClockOff})
	if _, err := New(Config{Generator: gen, MaxBodyBytes: -1}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("New with MaxBodyBytes -1: err = %v, want ErrInvalidConfig", err)
	}
}
