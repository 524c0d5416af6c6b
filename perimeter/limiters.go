package perimeter

import (
	"maps"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxUnlisted bounds how many unlisted identities get a bucket of their
// own under the default policy; past it, further unlisted identities share
// one. It keeps memory bounded whatever names certificates carry.
const maxUnlisted = 10000

// caller is one identity's bucket and instruments.
type caller struct {
	lim *rate.Limiter
	c   counters
}

// table is the callers file in force: immutable but for the limiters, whose
// limits are updated in place when a reload changes them.
type table struct {
	gen      uint64
	callers  *Callers
	listed   map[string]*caller
	unlisted *unlisted // nil: unlisted identities are denied
	denied   counters  // for refusals of identities not allowed
}

// unlisted holds the buckets of unlisted identities under the default
// policy, made on first use.
type unlisted struct {
	mu       sync.Mutex
	policy   Policy
	byID     map[string]*caller
	overflow *caller
	c        counters
}

// lookup returns the caller state of id, or nil when id may not connect.
func (t *table) lookup(id string, now time.Time) *caller {
	if c, ok := t.listed[id]; ok {
		return c
	}
	if t.unlisted == nil {
		return nil
	}
	return t.unlisted.get(id, now)
}

func (u *unlisted) get(id string, now time.Time) *caller {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c, ok := u.byID[id]; ok {
		return c
	}
	if len(u.byID) >= maxUnlisted {
		if u.overflow == nil {
			u.overflow = &caller{lim: newLimiter(u.policy, now), c: u.c}
		}
		return u.overflow
	}
	c := &caller{lim: newLimiter(u.policy, now), c: u.c}
	u.byID[id] = c
	return c
}

// newLimiter returns a full bucket for p.
func newLimiter(p Policy, now time.Time) *rate.Limiter {
	lim := rate.NewLimiter(rate.Limit(p.Rate), p.Burst)
	lim.SetLimitAt(now, rate.Limit(p.Rate)) // anchor the bucket's clock at now
	return lim
}

// setPolicy updates lim's limits in place, keeping its tokens.
func setPolicy(lim *rate.Limiter, p Policy, now time.Time) {
	if lim.Limit() != rate.Limit(p.Rate) {
		lim.SetLimitAt(now, rate.Limit(p.Rate))
	}
	if lim.Burst() != p.Burst {
		lim.SetBurstAt(now, p.Burst)
	}
}

// newTable builds the table for cs, reusing prev's buckets (limits updated
// in place) so a reload neither refills nor drains any caller.
func newTable(cs *Callers, prev *table, m *metrics, now time.Time) *table {
	t := &table{callers: cs, listed: make(map[string]*caller, len(cs.Listed)), denied: m.counters(labelUnlisted)}
	var prevUnlisted map[string]*caller
	if prev != nil {
		t.gen = prev.gen + 1
		if prev.unlisted != nil {
			prev.unlisted.mu.Lock()
			prevUnlisted = maps.Clone(prev.unlisted.byID)
			prev.unlisted.mu.Unlock()
		}
	}
	for id, p := range cs.Listed {
		var c *caller
		if prev != nil {
			c = prev.listed[id]
		}
		if c == nil {
			c = prevUnlisted[id] // an unlisted caller now listed keeps its bucket
		}
		if c != nil {
			setPolicy(c.lim, p, now)
			c = &caller{lim: c.lim, c: m.counters(id)}
		} else {
			c = &caller{lim: newLimiter(p, now), c: m.counters(id)}
		}
		t.listed[id] = c
	}
	if cs.Default != nil {
		u := &unlisted{policy: *cs.Default, byID: map[string]*caller{}, c: t.denied}
		for id, c := range prevUnlisted {
			if _, listed := cs.Listed[id]; !listed {
				setPolicy(c.lim, *cs.Default, now)
				u.byID[id] = c
			}
		}
		t.unlisted = u
	}
	return t
}
