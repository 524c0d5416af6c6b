package perimeter

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values that are not identities. No identity in a callers file may
// start with "(", so these never collide with a listed caller.
const (
	// labelUnlisted is every identity not listed in the callers file.
	labelUnlisted = "(unlisted)"
	// labelNone is a verified certificate that names no caller.
	labelNone = "(none)"
)

// metrics are the perimeter's instruments. The "caller" label is the
// identity only for callers listed in the callers file; every other
// identity shares labelUnlisted. An identity is whatever SAN a certificate
// holds, and the perimeter must not let a caller grow /metrics without
// bound by presenting new names (nor make Prometheus store a series per
// certificate a CA ever issued): the listed set is the operator's, and
// bounded.
type metrics struct {
	issued, throttled, refused *prometheus.CounterVec
	reloads                    *prometheus.CounterVec
	failing, lastSuccess       *prometheus.GaugeVec
	holders                    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_caller_ids_issued_total",
			Help: `IDs issued, by caller identity ("(unlisted)": every identity the callers file does not list).`,
		}, []string{"caller"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_caller_requests_throttled_total",
			Help: "Mint requests refused with 429 because the caller was over its quota, by caller identity.",
		}, []string{"caller"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_caller_refused_total",
			Help: `Callers refused: at="handshake" a TLS connection whose verified certificate names no caller ("(none)") or one the callers file does not allow; at="request" a request on an older connection from a caller no longer allowed.`,
		}, []string{"caller", "at"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_perimeter_reloads_total",
			Help: `Reloads of the perimeter's files after they changed, by file ("tls-cert", "client-ca", "callers") and result ("ok", or "error": the last good configuration stays).`,
		}, []string{"file", "result"}),
		failing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowfence_perimeter_reload_failing",
			Help: `1 while the file ("tls-cert", "client-ca", "callers") fails to load (unreadable, not a regular file, over its size cap, or invalid: the log says why) and the last good configuration stays in force; 0 once it loads.`,
		}, []string{"file"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowfence_perimeter_reload_last_success_timestamp_seconds",
			Help: `When the file was last read and found in force (loaded, or unchanged since it loaded), Unix seconds. It advances every poll interval (serve: --reload-every) while all is well; it stops while the file fails to load or a reload is stuck (a read on a hung filesystem).`,
		}, []string{"file"}),
		holders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowfence_caller_quota_holders",
			Help: "The live holders of the fleet this holder last counted in its lease store: it enforces each caller's quota divided by this (the rate; the burst too, but never below the largest batch).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.issued, m.throttled, m.refused, m.reloads, m.failing, m.lastSuccess, m.holders} {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("perimeter: registering metrics: %w", err)
		}
		done = append(done, c)
	}
	return m, nil
}

// counters are one label value's instruments, curried once so the request
// path does no label lookups.
type counters struct {
	issued, throttled, refusedRequest prometheus.Counter
}

func (m *metrics) counters(label string) counters {
	return counters{
		issued:         m.issued.WithLabelValues(label),
		throttled:      m.throttled.WithLabelValues(label),
		refusedRequest: m.refused.WithLabelValues(label, "request"),
	}
}
