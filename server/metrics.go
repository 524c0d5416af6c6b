package server

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// numKnownStatuses is how many statuses statusIndex knows: their request
// counters are curried up front; others are looked up when they happen.
const numKnownStatuses = 12

func statusIndex(code int) int {
	switch code {
	case 200:
		return 0
	case 400:
		return 1
	case 404:
		return 2
	case 405:
		return 3
	case 413:
		return 4
	case 422:
		return 5
	case 500:
		return 6
	case 503:
		return 7
	case 429:
		return 8
	case 403:
		return 9
	case 501:
		return 10
	case 415:
		return 11
	}
	return -1
}

// metrics holds the per-request instruments, curried at construction so a
// request costs two atomic adds and a histogram observation.
type metrics struct {
	requestsVec *prometheus.CounterVec
	// Indexed by endpoint: one per route, then one for unmatched paths.
	requests [][numKnownStatuses]prometheus.Counter
	latency  []prometheus.Observer
	labels   []string
}

// newMetrics registers the request instruments of the routes rs and the
// collector that reads the generator, the lease and the region numbers
// (nil: not exported) at scrape time.
func newMetrics(reg prometheus.Registerer, rs []route, gen *snowfence.Generator, ls StatusReporter, regions func() (left, total int), draining func() bool) (*metrics, error) {
	m := &metrics{
		requestsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_http_requests_total",
			Help: "HTTP requests by endpoint (path pattern) and status code.",
		}, []string{"endpoint", "code"}),
	}
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "snowfence_http_request_duration_seconds",
		Help:    "Time from routing a request to its handler returning, by endpoint.",
		Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1},
	}, []string{"endpoint"})
	drainingGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowfence_draining",
		Help: "1 once the server is shutting down (health and readiness report 503), else 0.",
	}, func() float64 { return b2f(draining()) })
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.requestsVec, latency, drainingGauge, newGeneratorCollector(gen, ls, regions)} {
		if err := reg.Register(c); err != nil {
			for _, d := range done { // leave the registry as it was
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("server: registering metrics: %w", err)
		}
		done = append(done, c)
	}
	// The statuses each route answers with get their series up front, so
	// rates start at zero instead of appearing with the first error.
	n := len(rs) + 1
	m.requests = make([][numKnownStatuses]prometheus.Counter, n)
	m.latency = make([]prometheus.Observer, n)
	m.labels = make([]string, n)
	for ep := range n {
		label, statuses := unmatchedLabel, []int{http.StatusNotFound}
		if ep < len(rs) {
			label, statuses = rs[ep].pattern, rs[ep].statuses
		}
		m.labels[ep] = label
		m.latency[ep] = latency.WithLabelValues(label)
		for _, code := range statuses {
			m.requests[ep][statusIndex(code)] = m.requestsVec.WithLabelValues(label, strconv.Itoa(code))
		}
	}
	return m, nil
}

// observe counts a finished request.
func (m *metrics) observe(ep endpoint, code int, d time.Duration) {
	if i := statusIndex(code); i >= 0 && m.requests[ep][i] != nil {
		m.requests[ep][i].Inc()
	} else {
		m.requestsVec.WithLabelValues(m.labels[ep], strconv.Itoa(code)).Inc()
	}
	m.latency[ep].Observe(d.Seconds())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// generatorCollector reads the generator's counters and health, and the
// lease's status, when Prometheus scrapes: minting pays nothing for them.
// The generator's limits are exported beside the values they bound, so an
// alert rule compares the two without a number of its own.
type generatorCollector struct {
	gen     *snowfence.Generator
	ls      StatusReporter
	limits  snowfence.Limits
	regions func() (left, total int) // nil: not exported

	issued, refusals, seqWaits, backWaits, fwdJumps, backSteps *prometheus.Desc
	issuing, untilFence, info                                  *prometheus.Desc
	clockSync, clockEst, clockMax, clockOffset, clockLimit     *prometheus.Desc
	clockLeap                                                  *prometheus.Desc
	timestampsEnd, exhaustionWarning                           *prometheus.Desc
	regionsLeft, regionsTotal                                  *prometheus.Desc
	leaseState, leaseInfo, leaseClaims, leaseLosses            *prometheus.Desc
	leaseRenewFailures, leaseMark, leaseRenewal, leaseNext     *prometheus.Desc
}

// refusalReasons are the generator's refusal reasons, exported at zero
// before they first happen.
func refusalReasons() []string {
	return []string{"fenced", "clock-backwards", "clock-unsynchronized", "layout", "canceled"}
}

// leaseStates are the lease states, one gauge series each.
func leaseStates() []lease.State {
	return []lease.State{lease.StateClaiming, lease.StateHeld, lease.StateFenced, lease.StateClosed}
}

func newGeneratorCollector(gen *snowfence.Generator, ls StatusReporter, regions func() (left, total int)) *generatorCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("snowfence_"+name, help, labels, nil)
	}
	return &generatorCollector{
		gen:         gen,
		ls:          ls,
		limits:      gen.Limits(),
		regions:     regions,
		issued:      d("ids_issued_total", "IDs issued by the generator (single and batch)."),
		refusals:    d("refusals_total", "Refused mint calls by reason: fenced, clock-backwards, clock-unsynchronized, layout, canceled.", "reason"),
		seqWaits:    d("sequence_waits_total", "Waits for the next tick because a tick's sequence numbers ran out."),
		backWaits:   d("backward_waits_total", "Small wall-clock steps back that were waited out."),
		fwdJumps:    d("clock_forward_jumps_total", "Wall-clock jumps ahead of the monotonic clock."),
		backSteps:   d("clock_backward_steps_total", "Refused wall-clock steps back (episodes, not calls)."),
		issuing:     d("issuing", "1 while a mint call would succeed, else 0."),
		untilFence:  d("fence_remaining_seconds", "Wall time left before the lease's reserved mark; negative once reached, +Inf for a lease without one. Absent with no lease."),
		info:        d("generator_info", "The machine and region numbers and the layout in force (value 1).", "machine", "region", "layout"),
		clockSync:   d("clock_synchronized", "1 if the kernel reports the clock synchronised, else 0. Absent with clock policy off."),
		clockEst:    d("clock_estimated_error_seconds", "The kernel's estimated clock error."),
		clockMax:    d("clock_max_error_seconds", "The kernel's maximum clock error."),
		clockOffset: d("clock_offset_seconds", "The last clock offset the NTP daemon handed the kernel."),
		clockLeap: d("clock_leap_pending", "1 while the kernel announces a leap second to insert at the end of the UTC day (STA_INS: it will step the clock back 1 s, "+
			"and the holder refuses for up to that second), -1 for one to delete, else 0. A smeared leap second never shows here. Absent with clock policy off."),
		leaseState:  d("lease_state", "1 for the lease keeper's current state, 0 for the others.", "state"),
		leaseInfo:   d("lease_info", "The lease holder and the machine number it holds (value 1).", "holder", "machine", "region"),
		leaseClaims: d("lease_claims_total", "Successful claims of a machine number."),
		leaseLosses: d("lease_losses_total", "Leases lost."),
		leaseRenewFailures: d("lease_renew_failures_total",
			"Failed lease renewals."),
		leaseMark:    d("lease_mark_timestamp_seconds", "The reserved high-water mark in the store (Unix seconds)."),
		leaseRenewal: d("lease_last_renewal_timestamp_seconds", "When the last acknowledged renewal was sent (Unix seconds)."),
		leaseNext: d("lease_next_state", "While a cutover of the layout schedule approaches (within the keeper's lead): 1 for the state of the number "+
			"claimed for the layout that takes over, 0 for the others; alert on claiming near the cutover. Absent otherwise.", "layout", "state"),
		clockLimit: d("clock_max_error_limit_seconds", "The kernel's maximum clock error the clock policy tolerates: above it policy require refuses and warn warns. "+
			"Absent with clock policy off."),
		timestampsEnd: d("layout_timestamps_end_seconds", "The first instant the schedule's timestamp cannot hold, its epoch + 2^time bits units "+
			"(Unix seconds): from it on the generator refuses (reason layout)."),
		exhaustionWarning: d("layout_exhaustion_warning_seconds", "How long before the timestamp runs out the generator starts warning in its health."),
		regionsLeft: d("region_numbers_left", "Region numbers of the fleet schedule's last layout that no region of the registry has had "+
			"(retired numbers are never reused). Absent without region bits or without the registry."),
		regionsTotal: d("region_numbers", "Region numbers the fleet schedule's last layout has, 2^region bits. Absent without region bits or without the registry."),
	}
}

func (c *generatorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.issued, c.refusals, c.seqWaits, c.backWaits, c.fwdJumps, c.backSteps,
		c.issuing, c.untilFence, c.info, c.clockSync, c.clockEst, c.clockMax, c.clockOffset, c.clockLimit, c.clockLeap,
		c.timestampsEnd, c.exhaustionWarning} {
		ch <- d
	}
	if c.regions != nil {
		ch <- c.regionsLeft
		ch <- c.regionsTotal
	}
	if c.ls != nil {
		for _, d := range []*prometheus.Desc{c.leaseState, c.leaseInfo, c.leaseClaims, c.leaseLosses,
			c.leaseRenewFailures, c.leaseMark, c.leaseRenewal, c.leaseNext} {
			ch <- d
		}
	}
}

func (c *generatorCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := c.gen.Stats()
	counter(c.issued, st.Issued)
	known := refusalReasons()
	for _, r := range known {
		counter(c.refusals, st.Refused[r], r)
	}
	for r, v := range st.Refused {
		if !slices.Contains(known, r) {
			counter(c.refusals, v, r)
		}
	}
	counter(c.seqWaits, st.SequenceWaits)
	counter(c.backWaits, st.BackwardWaits)
	counter(c.fwdJumps, st.ForwardJumps)
	counter(c.backSteps, st.BackwardSteps)

	h := c.gen.Health()
	gauge(c.issuing, b2f(h.Issuing))
	if h.Machine >= 0 {
		fence := h.UntilFence.Seconds()
		if !h.HasFence {
			fence = math.Inf(1)
		}
		gauge(c.untilFence, fence)
		gauge(c.info, 1, strconv.Itoa(h.Machine), strconv.Itoa(h.Region), h.Layout)
	}
	if h.Clock != (snowfence.ClockStatus{}) {
		gauge(c.clockSync, b2f(h.Clock.Synchronized))
		gauge(c.clockEst, h.Clock.EstimatedError.Seconds())
		gauge(c.clockMax, h.Clock.MaxError.Seconds())
		gauge(c.clockOffset, h.Clock.Offset.Seconds())
		leap := 0.0
		switch h.Clock.Leap {
		case snowfence.LeapInsert:
			leap = 1
		case snowfence.LeapDelete:
			leap = -1
		}
		gauge(c.clockLeap, leap)
	}
	if c.limits.ClockPolicy != snowfence.ClockOff {
		gauge(c.clockLimit, c.limits.MaxClockError.Seconds())
	}
	gauge(c.timestampsEnd, float64(c.limits.TimestampsEnd.UnixMilli())/1000)
	gauge(c.exhaustionWarning, c.limits.ExhaustionWarning.Seconds())
	if c.regions != nil {
		if left, total := c.regions(); total > 0 {
			gauge(c.regionsLeft, float64(left))
			gauge(c.regionsTotal, float64(total))
		}
	}

	if c.ls == nil {
		return
	}
	ls := c.ls.Status()
	for _, s := range leaseStates() {
		gauge(c.leaseState, b2f(ls.State == s), string(s))
	}
	if ls.Machine >= 0 {
		gauge(c.leaseInfo, 1, ls.Holder, strconv.Itoa(ls.Machine), strconv.Itoa(ls.Region))
	}
	counter(c.leaseClaims, ls.Claims)
	counter(c.leaseLosses, ls.Losses)
	counter(c.leaseRenewFailures, ls.RenewFailures)
	if ls.MarkMs != 0 {
		gauge(c.leaseMark, float64(ls.MarkMs)/1000)
	}
	if !ls.LastRenewal.IsZero() {
		gauge(c.leaseRenewal, float64(ls.LastRenewal.UnixMilli())/1000)
	}
	if n := ls.Next; n != nil {
		for _, s := range leaseStates() {
			gauge(c.leaseNext, b2f(n.State == s), n.Layout, string(s))
		}
	}
}
