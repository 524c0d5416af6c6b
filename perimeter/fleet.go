package perimeter

// # A caller's quota is the fleet's
//
// The callers file gives each caller one quota for the whole fleet: the
// holders that share a lease store's keyspace and region. A holder cannot
// see what the others granted without a network call per request, so each
// enforces its share: the caller's rate divided by the number of live
// holders it last counted in the store (SetHolders; package service counts
// them as it renews), and the burst divided too, but never below MinBurst
// (a batch of the largest size must stay possible at every holder) nor
// above the file's. A caller spread evenly over the fleet (a load balancer,
// or the client's own rotation) so takes at most its rate in total; a
// caller pinned to one holder gets that holder's share, rate/N.
//
// A change of the count changes every bucket's limits in place, as a
// reload does: no bucket is refilled or drained by it. A bucket that holds
// more than the new burst is cut to it (the count rose: the other holders
// now grant too); one that holds less keeps what it holds and refills at
// the new rate (the count fell: the share grows from what is left, never
// at once). Until the first count, and whenever the store cannot be read,
// the last count stays in force; before any count it is 1, each holder
// granting the whole quota, as when quotas were per process.

// Share returns the part of p that one of n holders enforces: Rate/n, and
// Burst/n rounded up but at least MinBurst and at most Burst. n below 2
// returns p.
func (p Policy) Share(n int) Policy {
	if n < 2 {
		return p
	}
	p.Rate /= float64(n)
	p.Burst = min(max((p.Burst+n-1)/n, MinBurst), p.Burst)
	return p
}

// Holders returns how many holders the perimeter divides each caller's
// quota among (see SetHolders): 1 until SetHolders says otherwise.
func (p *Perimeter) Holders() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holders
}

// SetHolders sets how many live holders of the fleet share each caller's
// quota: from then on this perimeter enforces each policy's Share(n). A
// count below 1 is taken as 1 (this holder, at least, holds). Buckets keep
// their tokens, cut to the new burst if they hold more. It is cheap when n
// is unchanged, so call it after every count.
func (p *Perimeter) SetHolders(n int) {
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == p.holders {
		return
	}
	p.log.Info("callers' quotas divided among the fleet's live holders", "holders", n, "was", p.holders)
	p.holders = n
	p.metrics.holders.Set(float64(n))
	if t := p.callers.Load(); t != nil {
		p.callers.Store(newTable(t.callers, t, p.metrics, p.now(), n))
	}
}
