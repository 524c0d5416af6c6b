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
	*bucket
	c counters
}

// bucket is one identity's token bucket, kept across reloads. Every use of
// lim goes through mu, at a time no earlier than any it was given before
// (at): golang.org/x/time/rate (v0.16.0) sets its last update to the time
// a reservation or limit change is made at even when that is earlier than
// the last, so a stale reading would rewind the bucket and the time
// between the two readings would be credited twice.
type bucket struct {
	mu   sync.Mutex
	last time.Time // the latest time lim was given
	lim  *rate.Limiter
}

// at returns now, or the bucket's latest time if now is earlier, and
// records it as the latest. Call it with mu held.
func (b *bucket) at(now time.Time) time.Time {
	if now.Before(b.last) {
		return b.last
	}
	b.last = now
	return now
}

// table is the callers file in force: immutable but for the limiters, whose
// limits are updated in place when a reload changes them.
type table struct {
	gen      uint64
	callers  *Callers
	holders  int // the fleet's holders the quotas are divided among (Policy.Share)
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
			u.overflow = &caller{bucket: newBucket(u.policy, now), c: u.c}
		}
		return u.overflow
	}
	c := &caller{bucket: newBucket(u.policy, now), c: u.c}
	u.byID[id] = c
	return c
}

// newBucket returns a full bucket for p.
func newBucket(p Policy, now time.Time) *bucket {
	lim := rate.NewLimiter(rate.Limit(p.Rate), p.Burst)
	lim.SetLimitAt(now, rate.Limit(p.Rate)) // anchor the bucket's clock at now
	return &bucket{last: now, lim: lim}
}

// setPolicy updates b's limits in place, keeping its tokens.
func (b *bucket) setPolicy(p Policy, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lim.Limit() == rate.Limit(p.Rate) && b.lim.Burst() == p.Burst {
		return
	}
	t := b.at(now)
	// A reservation of nothing brings the limiter's last event up to t
	// with its last update, which a later CancelAt relies on (see
	// grant.Done).
	b.lim.ReserveN(t, 0)
	if b.lim.Limit() != rate.Limit(p.Rate) {
		b.lim.SetLimitAt(t, rate.Limit(p.Rate))
	}
	if b.lim.Burst() != p.Burst {
		b.lim.SetBurstAt(t, p.Burst)
	}
}

// newTable builds the table for cs, each policy shared among holders
// (Policy.Share), reusing prev's buckets (limits updated in place) so
// neither a reload nor a change of the holders refills or drains any
// caller.
func newTable(cs *Callers, prev *table, m *metrics, now time.Time, holders int) *table {
	t := &table{callers: cs, holders: holders, listed: make(map[string]*caller, len(cs.Listed)), denied: m.counters(labelUnlisted)}
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
		p = p.Share(holders)
		var c *caller
		if prev != nil {
			c = prev.listed[id]
		}
		if c == nil {
			c = prevUnlisted[id] // an unlisted caller now listed keeps its bucket
		}
		if c != nil {
			c.setPolicy(p, now)
			c = &caller{bucket: c.bucket, c: m.counters(id)}
		} else {
			c = &caller{bucket: newBucket(p, now), c: m.counters(id)}
		}
		t.listed[id] = c
	}
	if cs.Default != nil {
		u := &unlisted{policy: cs.Default.Share(holders), byID: map[string]*caller{}, c: t.denied}
		for id, c := range prevUnlisted {
			if _, listed := cs.Listed[id]; !listed {
				c.setPolicy(u.policy, now)
				u.byID[id] = c
			}
		}
		t.unlisted = u
	}
	return t
}
