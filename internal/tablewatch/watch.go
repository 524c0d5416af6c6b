package tablewatch

import (
	"sync"
	"time"
)

// A Key names one number's row: its region (keyspace) and number.
type Key struct{ Region, Machine int }

// A Watch is what the Store values of one table that Keyspace opened from
// one another remember of it: the rows they saw in the current generation
// and the restores they noticed. It is safe for concurrent use.
type Watch struct {
	mu sync.Mutex
	// gen counts the restores noticed; leases remember the generation they
	// were claimed in (claims), and those of an earlier one are fenced.
	gen uint64
	// what describes the last restore noticed, at (system clock) when.
	what string
	at   time.Time
	// pending: a restore was noticed and no claim has set the floor yet.
	pending bool
	// floorMs is the restore floor: no claim starts below it (Unix ms, on
	// the clock of the claimer that set it).
	floorMs int64
	// claims is, by claim nonce, the generation each lease of these Store
	// values was claimed in.
	claims map[string]uint64
	// seen is every row seen in this generation, as last seen.
	seen map[Key]Row
}

// A Span is what a Watch knew, before a request was sent, of the rows of
// numbers Lo to Hi of one region: the baseline the request's answer is
// judged against.
type Span struct {
	gen            uint64
	region, lo, hi int
	rows           map[int]Row
}

// Before returns the Span of numbers lo to hi of region: call it before
// sending the request whose answer After judges.
func (w *Watch) Before(region, lo, hi int) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	sp := Span{gen: w.gen, region: region, lo: lo, hi: hi, rows: map[int]Row{}}
	if lo == hi {
		if r, ok := w.seen[Key{region, lo}]; ok {
			sp.rows[lo] = r
		}
		return sp
	}
	for k, r := range w.seen {
		if k.Region == region && k.Machine >= lo && k.Machine <= hi {
			sp.rows[k.Machine] = r
		}
	}
	return sp
}

// Held returns the mark the Span knew for machine's row while held under
// claim at epoch, or 0: a renewal of that claim must not find it lower.
func (sp Span) Held(machine int, epoch uint64, claim string) int64 {
	if r, ok := sp.rows[machine]; ok && r.held() && r.Epoch == epoch && r.Claim == claim {
		return r.MarkMs
	}
	return 0
}

// recordLocked keeps r as the row of k unless what is kept is later in the
// row's history (an answer to a request sent earlier may arrive after one
// to a request sent later). Any row actually seen may be kept: a request
// sent after it was received sees it or a later state, unless the table
// went back. Called with w.mu held.
func (w *Watch) recordLocked(k Key, r Row) {
	cur, ok := w.seen[k]
	if !ok || later(r, cur) {
		w.seen[k] = r
	}
}

// later reports whether r is later than cur in one row's history, as far
// as the two tell: a higher epoch; under one claim, held before free (a
// release), quarantined before free (an unquarantine), then a higher mark.
func later(r, cur Row) bool {
	switch {
	case r.Epoch != cur.Epoch:
		return r.Epoch > cur.Epoch
	case r.Claim != cur.Claim || !r.Exists:
		return false
	case !cur.Exists:
		return true
	case r.free() != cur.free():
		return r.free()
	}
	return r.MarkMs > cur.MarkMs
}

// Gen returns the number of restores noticed so far.
func (w *Watch) Gen() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// Notice records a restore seen in an answer to a request sent in
// generation gen, as what describes it, unless one was noticed since that
// request was sent; it reports whether it started a new generation.
func (w *Watch) Notice(gen uint64, what string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen {
		return false
	}
	w.noticeLocked(what)
	return true
}

// noticeLocked starts a new generation: every lease claimed before is
// fenced, the rows seen are forgotten (they are of the old history), and
// the next claim sets the floor. Called with w.mu held.
func (w *Watch) noticeLocked(what string) {
	w.gen++
	w.what, w.at = what, time.Now()
	w.pending = true
	w.seen = nil
}

// Noticed returns what the last restore noticed was and when it was
// noticed (system clock), or "" if none was.
func (w *Watch) Noticed() (string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.what, w.at
}

// Floor returns the restore floor a claim at the claimer's clock nowMs
// starts at or above (0: no restore noticed), and the generation the claim
// is made in, for Remember. The first claim after a restore was noticed
// sets the floor to its clock plus window, the store's restore window: a
// holder cut off by the restore may issue up to that long after its last
// renewal, which was before the moment noticed. The floor never falls.
func (w *Watch) Floor(nowMs int64, window time.Duration) (floorMs int64, gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending {
		w.pending = false
		w.floorMs = max(w.floorMs, nowMs+window.Milliseconds())
	}
	return w.floorMs, w.gen
}

// Remember records that the lease of claim was claimed in generation gen
// (as Floor returned it). It reports false if a restore was noticed since:
// the claim may have started below the floor that restore sets, and the
// lease is fenced.
func (w *Watch) Remember(claim string, gen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.claims == nil {
		w.claims = map[string]uint64{}
	}
	w.claims[claim] = gen
	return gen == w.gen
}

// Forget drops the lease of claim, which is over.
func (w *Watch) Forget(claim string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.claims, claim)
}

// Restored reports whether the lease of claim is fenced: a restore was
// noticed after it was claimed, or, once one was noticed, it was not
// claimed through these Store values at all. what and at describe the last
// restore noticed.
func (w *Watch) Restored(claim string) (what string, at time.Time, fenced bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == 0 {
		return "", time.Time{}, false
	}
	if g, ok := w.claims[claim]; ok && g == w.gen {
		return "", time.Time{}, false
	}
	return w.what, w.at, true
}
