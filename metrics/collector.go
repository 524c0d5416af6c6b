package metrics

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// StatusReporter reports the state of the lease behind the generator;
// *lease.Keeper is one.
type StatusReporter interface {
	Status() lease.Status
}

var _ StatusReporter = (*lease.Keeper)(nil)

// Config says what a Collector reads. Only Generator is required; the zero
// value of every other field leaves its series out, as the field says.
type Config struct {
	// Generator is the generator whose counters, health and limits are
	// exported. Required. The Collector only reads it, and never closes
	// it.
	Generator *snowfence.Generator
	// Keeper, if set, is the lease behind Generator (the *lease.Keeper
	// the generator was built on, node.Node.Keeper): its state, holder,
	// claims, losses, renewal failures, mark, last renewal and the next
	// layout's claim are exported as the snowfence_lease_* series. Nil:
	// none of them, as for a generator on snowfence.Static.
	Keeper StatusReporter
	// RegionNumbers, if set, is called on every scrape for the region
	// numbers the region registry has left out of the total the fleet
	// schedule's last layout has, exported as
	// snowfence_region_numbers_left and snowfence_region_numbers; a total
	// of zero exports neither. RegionNumbers (the function of this
	// package) computes both from a schedule and a registry read from the
	// store. It must be safe for concurrent use and should answer from
	// memory (serve reads its registry every 30 s, never at scrape time).
	// Nil: neither is exported.
	RegionNumbers func() (left, total int)
}

// A Collector is a prometheus.Collector of one generator and its lease
// keeper: it reads their counters, health and status when Prometheus
// scrapes, so minting pays nothing for it. The generator's limits are
// exported beside the values they bound, so an alert rule compares the two
// without a number of its own. It is what "snowfence serve" registers for
// its generator; register it on the embedding service's own registry.
type Collector struct {
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

var _ prometheus.Collector = (*Collector)(nil)

// refusalReasons are the generator's refusal reasons, exported at zero
// before they first happen.
func refusalReasons() []string {
	return []string{"fenced", "clock-backwards", "clock-unsynchronized", "layout", "canceled"}
}

// leaseStates are the lease states, one gauge series each.
func leaseStates() []lease.State {
	return []lease.State{lease.StateClaiming, lease.StateHeld, lease.StateFenced, lease.StateClosed}
}

// New returns the Collector of cfg's generator and keeper; register it
// with prometheus.Registerer.Register. The generator's limits are read
// once, here; everything else at every scrape. It fails with
// snowfence.ErrInvalidConfig without a Generator.
func New(cfg Config) (*Collector, error) {
	if cfg.Generator == nil {
		return nil, fmt.Errorf("%w: metrics: Config.Generator is nil; pass the generator whose series to export", snowfence.ErrInvalidConfig)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("snowfence_"+name, help, labels, nil)
	}
	return &Collector{
		gen:         cfg.Generator,
		ls:          cfg.Keeper,
		limits:      cfg.Generator.Limits(),
		regions:     cfg.RegionNumbers,
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
	}, nil
}

// Describe implements prometheus.Collector: the descriptions of every
// series the Collector may export with its Config.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
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

// Collect implements prometheus.Collector: it reads the generator's stats,
// health and limits, the region numbers and the keeper's status now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
