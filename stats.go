package snowfence

// Stats counts what a generator did since it was made.
type Stats struct {
	// Issued is the number of IDs handed out.
	Issued uint64
	// Refused counts refused calls by reason: "fenced", "clock-backwards",
	// "clock-unsynchronized", "layout" (exhausted or unusable), "canceled".
	Refused map[string]uint64
	// SequenceWaits counts waits for the next tick because a tick's
	// sequence ran out; BackwardWaits counts small clock steps back waited
	// out.
	SequenceWaits, BackwardWaits uint64
	// ForwardJumps counts wall-clock jumps ahead of the monotonic clock.
	ForwardJumps uint64
	// BackwardSteps counts refused clock steps back (episodes, not calls).
	BackwardSteps uint64
}

// Stats returns a copy of the generator's counters.
func (g *Generator) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	s.Refused = make(map[string]uint64, len(g.stats.Refused))
	for k, v := range g.stats.Refused {
		s.Refused[k] = v
	}
	return s
}
