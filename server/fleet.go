package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// How the status page's fleet is read from the lease store: at most once
// per fleetEvery however many pages poll (later polls within it get the
// same answer), each read bounded by fleetTimeout.
const (
	fleetEvery   = time.Second
	fleetTimeout = 2 * time.Second
)

// fleetStatus is the fleet as GET /v1/status reports it.
type fleetStatus struct {
	// Available is false without Config.Fleet (a library's server, say):
	// the page then says the fleet is not available here.
	Available bool `json:"available"`
	// Error is the last read's failure; Records are then empty.
	Error string `json:"error,omitempty"`
	// ReadMs is when the records were read (Unix ms).
	ReadMs int64 `json:"read_ms,omitempty"`
	// Records are the numbers that matter (lease.Notable: held,
	// quarantined, released lately); Quiet sums up the free numbers that
	// only carry a mark — after raise-marks, every number of its range —
	// so that they do not bury the page.
	Records []recordStatus `json:"records"`
	Quiet   lease.Quiet    `json:"quiet"`
}

// recordStatus is one number's record (lease.Record, without the claim
// attempt's identity, which the page has no use for).
type recordStatus struct {
	Machine     int    `json:"machine"`
	Region      int    `json:"region"`
	RegionName  string `json:"region_name,omitempty"`
	Holder      string `json:"holder,omitempty"`
	Token       uint64 `json:"token,omitempty"`
	MarkMs      int64  `json:"mark_ms"`
	ExpiresMs   int64  `json:"expires_ms,omitempty"`
	Quarantined bool   `json:"quarantined,omitempty"`
}

// fleetCache reads the fleet through Config.Fleet, at most once per
// fleetEvery. The zero value, with a nil read, reports the fleet not
// available. Safe for concurrent use.
type fleetCache struct {
	list func(ctx context.Context) ([]lease.Record, error) // nil: not available
	now  func() time.Time

	mu   sync.Mutex // one read at a time; guards at and last
	at   time.Time
	last *fleetStatus
}

// read returns the fleet, read again unless the last read is younger than
// fleetEvery; names, if set, names the records' regions.
func (c *fleetCache) read(ctx context.Context, names func(int) (string, bool)) *fleetStatus {
	if c == nil || c.list == nil {
		return &fleetStatus{Records: []recordStatus{}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.last != nil && now.Sub(c.at) < fleetEvery && now.Sub(c.at) >= 0 {
		return c.last
	}
	ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	defer cancel()
	recs, err := c.list(ctx)
	f := &fleetStatus{Available: true, ReadMs: now.UnixMilli(), Records: make([]recordStatus, 0, len(recs))}
	if err != nil {
		f.Error = err.Error()
	}
	shown, quiet := lease.Notable(recs, now.UnixMilli())
	f.Quiet = quiet
	for _, r := range shown {
		rs := recordStatus{Machine: r.Machine, Region: r.Region, Holder: r.Holder, Token: r.Token,
			MarkMs: r.MarkMs, ExpiresMs: r.ExpiresMs, Quarantined: r.Quarantined}
		if names != nil {
			rs.RegionName = regionName(names, r.Region)
		}
		f.Records = append(f.Records, rs)
	}
	if ctx.Err() == nil || err == nil {
		// A read cut short by the caller going away is not kept.
		c.at, c.last = now, f
	}
	return f
}

// regionName is the name of region number n, "" when names does not know
// it or only echoes the number.
func regionName(names func(int) (string, bool), n int) string {
	name, ok := names(n)
	if !ok || name == strconv.Itoa(n) {
		return ""
	}
	return name
}

// newFleetCache reads the fleet through list (nil: not available), on
// clock's wall time.
func newFleetCache(list func(ctx context.Context) ([]lease.Record, error), clock snowfence.Clock) *fleetCache {
	return &fleetCache{list: list, now: func() time.Time { return time.UnixMilli(clock.Now().WallMs) }}
}
