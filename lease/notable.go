package lease

import "time"

// RecentlyFree is how long after its mark a free number still counts as
// recently held in a listing (Notable).
const RecentlyFree = time.Hour

// Quiet summarises the free records a listing leaves out (Notable): N
// numbers that only carry a mark, the highest of them MaxMarkMs.
type Quiet struct {
	N         int   `json:"count"`
	MaxMarkMs int64 `json:"max_mark_ms,omitempty"`
}

// Notable splits recs, as an operator reads them at nowMs (Unix ms), into
// the records that matter — held, quarantined, or free with a mark less
// than RecentlyFree old that no other free record shares (a number
// released lately) — in their order, and a summary of the rest: free
// numbers that only carry a mark, raised by leases raise-marks (which
// writes one mark to every number of its range: the marks shared) or
// released long ago. After raise-marks over 0-1023 the listing is then the
// holders and one line, not 1,024 rows (leases list, the status page).
func Notable(recs []Record, nowMs int64) ([]Record, Quiet) {
	shared := make(map[int64]int)
	for _, r := range recs {
		if !r.Held() && !r.Quarantined {
			shared[r.MarkMs]++
		}
	}
	var shown []Record
	var q Quiet
	for _, r := range recs {
		if r.Held() || r.Quarantined || (r.MarkMs > nowMs-RecentlyFree.Milliseconds() && shared[r.MarkMs] == 1) {
			shown = append(shown, r)
			continue
		}
		q.N++
		q.MaxMarkMs = max(q.MaxMarkMs, r.MarkMs)
	}
	return shown, q
}
