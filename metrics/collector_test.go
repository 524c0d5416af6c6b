package metrics_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/metrics"
)

// keeper is a lease keeper's status with a number held, renewed, and the
// next layout's number being claimed: every lease series is exported.
type keeper struct{}

func (keeper) Status() lease.Status {
	now := time.Now()
	return lease.Status{State: lease.StateHeld, Machine: 37, Holder: "host/1/2", Token: 7,
		MarkMs: now.Add(10 * time.Second).UnixMilli(), LastRenewal: now, Claims: 1,
		Next: &lease.Status{State: lease.StateClaiming, Layout: "v2", Machine: -1}}
}

// generator is a generator on machine 37 with clock policy warn on a
// readable clock: every generator and clock series is exported.
func generator(t *testing.T) *snowfence.Generator {
	t.Helper()
	g, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockWarn,
		ClockStatus: func() (snowfence.ClockStatus, error) {
			return snowfence.ClockStatus{Synchronized: true, EstimatedError: time.Millisecond, MaxError: 2 * time.Millisecond}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// names returns the sorted metric names c exports, gathered from a
// pedantic registry: one that fails if c collects a series it did not
// describe, or describes one inconsistently.
func names(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out
}

func TestNewWithoutGenerator(t *testing.T) {
	if _, err := metrics.New(metrics.Config{Keeper: keeper{}}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("New without a Generator: err = %v, want ErrInvalidConfig", err)
	}
}

// Each zero field of Config leaves its series out, as its doc says; with
// every field set every series is there, and each is one the collector
// described (the pedantic registry checks it) and passes Prometheus's
// naming lint.
func TestConfigZeroValues(t *testing.T) {
	gen := generator(t)
	leaseSeries := []string{"snowfence_lease_state", "snowfence_lease_info", "snowfence_lease_claims_total", "snowfence_lease_losses_total",
		"snowfence_lease_renew_failures_total", "snowfence_lease_mark_timestamp_seconds", "snowfence_lease_last_renewal_timestamp_seconds",
		"snowfence_lease_next_state"}
	regions := []string{"snowfence_region_numbers_left", "snowfence_region_numbers"}
	always := []string{"snowfence_ids_issued_total", "snowfence_refusals_total", "snowfence_sequence_waits_total", "snowfence_backward_waits_total",
		"snowfence_clock_forward_jumps_total", "snowfence_clock_backward_steps_total", "snowfence_issuing", "snowfence_fence_remaining_seconds",
		"snowfence_generator_info", "snowfence_clock_synchronized", "snowfence_clock_estimated_error_seconds", "snowfence_clock_max_error_seconds",
		"snowfence_clock_offset_seconds", "snowfence_clock_leap_pending", "snowfence_clock_max_error_limit_seconds",
		"snowfence_layout_timestamps_end_seconds", "snowfence_layout_exhaustion_warning_seconds"}
	for _, c := range []struct {
		name string
		cfg  metrics.Config
		want [][]string
	}{
		{"generator only", metrics.Config{Generator: gen}, [][]string{always}},
		{"keeper", metrics.Config{Generator: gen, Keeper: keeper{}}, [][]string{always, leaseSeries}},
		{"region numbers", metrics.Config{Generator: gen, RegionNumbers: func() (int, int) { return 5, 8 }}, [][]string{always, regions}},
		{"region numbers, total 0", metrics.Config{Generator: gen, RegionNumbers: func() (int, int) { return 0, 0 }}, [][]string{always}},
		{"everything", metrics.Config{Generator: gen, Keeper: keeper{}, RegionNumbers: func() (int, int) { return 5, 8 }}, [][]string{always, leaseSeries, regions}},
	} {
		t.Run(c.name, func(t *testing.T) {
			col, err := metrics.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(slices.Values(slices.Concat(c.want...)))
			if got := names(t, col); !slices.Equal(got, want) {
				t.Errorf("series %v\nwant %v", got, want)
			}
			problems, err := testutil.CollectAndLint(col)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		})
	}
}
