package service

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a connection is shed, the values of the "reason" label of
// snowfence_http_connections_refused_total.
const (
	// shedTotal: a new connection refused because its listener is at its
	// cap (Config.MaxConns) or the listeners at their shared budget.
	shedTotal = "total"
	// shedPerPeer: a new connection refused because its address is at its
	// cap on the listener (Config.MaxConnsPerPeer).
	shedPerPeer = "per_peer"
	// shedEvictedIdle: an idle keep-alive connection closed to make room
	// for a new one.
	shedEvictedIdle = "evicted_idle"
)

// connMetrics are the connection caps' series, in the service's registry.
type connMetrics struct {
	open         *prometheus.GaugeVec
	max          *prometheus.GaugeVec
	budget       prometheus.Gauge
	refused      *prometheus.CounterVec
	acceptErrors *prometheus.CounterVec
}

func newConnMetrics(reg prometheus.Registerer, caps connCaps) (*connMetrics, error) {
	m := &connMetrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowfence_http_connections",
			Help: `Open connections, by listener ("api", "admin").`,
		}, []string{"listener"}),
		max: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowfence_http_connections_max",
			Help: `The cap on a listener's open connections (--max-conns; the listeners together also stay within snowfence_http_connections_budget).`,
		}, []string{"listener"}),
		budget: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowfence_http_connections_budget",
			Help: "The open connections every listener holds together: the open-files limit (ulimit -n) minus the reserve kept for the lease store.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_http_connections_refused_total",
			Help: `Connections shed, by listener and reason: "total" a new one over the listener's cap or the shared budget, "per_peer" a new one over its address's cap (refused with a 503 on plain HTTP, closed on TLS), "evicted_idle" an idle keep-alive one closed to make room for a new one.`,
		}, []string{"listener", "reason"}),
		acceptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowfence_http_accept_errors_total",
			Help: "Failures to accept a connection (e.g. the process at its open-files limit), by listener; accepting is retried with a backoff.",
		}, []string{"listener"}),
	}
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.open, m.max, m.budget, m.refused, m.acceptErrors} {
		if err := reg.Register(c); err != nil {
			for _, d := range done { // leave the registry as it was
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("start: registering the connection metrics: %w", err)
		}
		done = append(done, c)
	}
	m.budget.Set(float64(caps.budget))
	return m, nil
}

// unregister removes the series from reg (New failed after registering).
func (m *connMetrics) unregister(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{m.open, m.max, m.budget, m.refused, m.acceptErrors} {
		reg.Unregister(c)
	}
}

// listenerMetrics are one listener's series.
type listenerMetrics struct {
	open                            prometheus.Gauge
	total, perPeer, evicted, accept prometheus.Counter
}

// forListener creates the series of the listener name (all at zero, so
// rates start there), with its cap.
func (m *connMetrics) forListener(name string, cap int) listenerMetrics {
	m.max.WithLabelValues(name).Set(float64(cap))
	return listenerMetrics{
		open:    m.open.WithLabelValues(name),
		total:   m.refused.WithLabelValues(name, shedTotal),
		perPeer: m.refused.WithLabelValues(name, shedPerPeer),
		evicted: m.refused.WithLabelValues(name, shedEvictedIdle),
		accept:  m.acceptErrors.WithLabelValues(name),
	}
}
