package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// requestMetrics holds the per-request instruments, curried at
// construction so a request costs two atomic adds and a histogram
// observation.
type requestMetrics struct {
	requestsVec *prometheus.CounterVec
	// Indexed by endpoint: one per route, then one for unmatched paths.
	requests [][numKnownStatuses]prometheus.Counter
	latency  []prometheus.Observer
	labels   []string
}

// newMetrics registers the request instruments of the routes rs, the
// draining gauge and gen, the collector of the generator and its lease
// (package metrics: the one definition of those series, which a library
// embedding the generator registers too).
func newMetrics(reg prometheus.Registerer, rs []route, gen prometheus.Collector, draining func() bool) (*requestMetrics, error) {
	m := &requestMetrics{
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
	for _, c := range []prometheus.Collector{m.requestsVec, latency, drainingGauge, gen} {
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
func (m *requestMetrics) observe(ep endpoint, code int, d time.Duration) {
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
