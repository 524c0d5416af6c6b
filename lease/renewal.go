package lease

import (
	"fmt"
	"slices"
	"sync"
)

// maxPending bounds the renewal values of unknown outcome a Renewals keeps
// per lease. Past it the oldest is dropped: if that one is what the store
// holds (every later attempt failed before it committed), the next
// renewal is refused with ErrLost and the keeper claims another number —
// availability, never uniqueness.
const maxPending = 16

// maxEarlier bounds the renewal values a Renewals keeps per lease from
// before its last acknowledged one (Check's sign of a restore).
const maxEarlier = 32

// Renewals is what one Store value remembers of the renewal values it
// wrote for the leases it renews (Lease.Renewal), so that a cloned holder
// process is caught within one renewal.
//
// A clone — a VM snapshot restored while the original still runs, a live
// clone, a forked image — holds the same lease as its original: holder,
// token, claim and mark. Token and claim alone let both renew for ever,
// minting the same IDs. So every extension writes a fresh random renewal
// value into the store's record, conditioned on the record still holding
// one this process wrote: Lease.Renewal, the value of its last
// acknowledged write, or one it sent since whose reply never came (it may
// have committed). Of two copies, the one whose renewal lands second finds
// the other's value and gets ErrLost. Release compares too (with Own: the
// holder's earlier values as well, which only a restore puts back), or a
// clone's release would lower the mark below what the original issued.
//
// Only the holder writes the value. Every other write that changes a held
// lease's record fences the lease — RaiseMarks and a quarantine change the
// token or remove the owner, a table store's restore fence changes the
// epoch, etcd's restore repair writes back a mark only for a lease it has
// already fenced — and every store compares token, claim and owner before
// the renewal value, so those writes leave the value as it was (a claim
// resets it: none until the first extension). A release writes none.
//
// The values come from crypto/rand (NewNonce), not math/rand: a clone
// copies a user-space generator's state with the rest of the process, and
// both copies would then draw the same "fresh" value. Even the kernel's
// generator, which crypto/rand reads, diverges in a VM restored from a
// snapshot only once it is reseeded — Linux 5.18 and later reseed it on
// the hypervisor's VM generation ID notification (the vmgenid driver).
//
// The zero value is ready to use; a Renewals is safe for concurrent use.
type Renewals struct {
	mu sync.Mutex
	m  map[renewalKey]*renewalMemo
}

// renewalKey identifies one claim.
type renewalKey struct {
	region, machine int
	token           uint64
	claim           string
}

// renewalMemo is what is known of one claim's renewal values: the last
// acknowledged, those sent since, whose outcome is unknown, and those
// written or sent before the last acknowledged one (the claim's none
// among them).
type renewalMemo struct {
	acked   string
	pending []string
	earlier []string
}

func keyOf(l *Lease) renewalKey { return renewalKey{l.Region, l.Machine, l.Token, l.Claim} }

// Next returns a fresh renewal value for a write on l (an extension), and
// remembers it as sent: until a write of l is acknowledged, the store may
// hold it. Call it before the write goes out.
func (r *Renewals) Next(l *Lease) string {
	v := NewNonce()
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memo(l)
	m.pending = append(m.pending, v)
	if len(m.pending) > maxPending {
		m.pending = slices.Delete(m.pending, 0, len(m.pending)-maxPending)
	}
	return v
}

// Acked records that the store holds v for l: a write of v was
// acknowledged, or the record was read back with v, a value Check took.
// The values l's claim held before are remembered as earlier ones.
func (r *Renewals) Acked(l *Lease, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memo(l)
	for _, was := range append([]string{l.Renewal, m.acked}, m.pending...) {
		if was != v && !slices.Contains(m.earlier, was) {
			m.earlier = append(m.earlier, was)
		}
	}
	if len(m.earlier) > maxEarlier {
		m.earlier = slices.Delete(m.earlier, 0, len(m.earlier)-maxEarlier)
	}
	m.acked, m.pending = v, nil
}

// Forget drops what is remembered of l: it was released or lost.
func (r *Renewals) Forget(l *Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, keyOf(l))
}

// Accepted returns the values a write on l may find in the store: those
// this process wrote or sent for l's claim (l.Renewal first; "" stands for
// no value, the state after a claim and the state of a record written by
// a version before renewal values). Stores compare the record's value with
// them in the write's own condition.
func (r *Renewals) Accepted(l *Lease) []string {
	vs := []string{l.Renewal}
	r.mu.Lock()
	if m := r.m[keyOf(l)]; m != nil {
		if m.acked != "" {
			vs = append(vs, m.acked)
		}
		vs = append(vs, m.pending...)
	}
	r.mu.Unlock()
	slices.Sort(vs)
	return slices.Compact(vs)
}

// Own returns every value a release of l may find in the store and still
// go ahead: Accepted, and the values this process wrote or sent for l's
// claim before its last acknowledged one. A record holding one of the
// latter went back in time (Check says ErrRestored for it), and no clone
// can have put it there; a release must still record the end of what the
// holder issued, which is what the next claimer must start above, or the
// restored, lower mark would stay held until a claimer's clock passed it.
// A value a second process wrote is in neither: a clone's release is
// refused.
func (r *Renewals) Own(l *Lease) []string {
	vs := r.Accepted(l)
	r.mu.Lock()
	if m := r.m[keyOf(l)]; m != nil {
		vs = append(vs, m.earlier...)
	}
	r.mu.Unlock()
	slices.Sort(vs)
	return slices.Compact(vs)
}

// Check says whether stored, the renewal value a record of l's claim
// holds, is one this process wrote or sent for it (Accepted): nil; or a
// value it wrote before its last acknowledged one — the record went back
// in time, which no clone can make it do: ErrRestored; or ErrLost saying
// that a second process renews the same claim (cloneError).
func (r *Renewals) Check(l *Lease, stored string) error {
	if r.accepts(l, stored) {
		return nil
	}
	r.mu.Lock()
	m := r.m[keyOf(l)]
	earlier := m != nil && slices.Contains(m.earlier, stored)
	r.mu.Unlock()
	if earlier {
		return fmt.Errorf("%w: machine %d region %d token %d: the store holds renewal value %q, which this process wrote before "+
			"its last acknowledged extension: the record went back to an earlier state (a restore, a failover that lost writes); "+
			"stop issuing on it, and claim again no earlier than the restore window", ErrRestored, l.Machine, l.Region, l.Token, stored)
	}
	return cloneError(l, stored)
}

// cloneError is the error for a lease whose record holds renewal value
// stored, which its holder never wrote: ErrLost, saying that a second
// process renewed the same claim and what to do.
func cloneError(l *Lease, stored string) error {
	return fmt.Errorf("%w: machine %d region %d token %d: the store holds renewal value %q, which this process did not write: "+
		"a second process renewed this same claim — a cloned process (a VM snapshot restored while the original runs, a live clone, "+
		"a forked image) — or the store went back to an earlier write of it; stop issuing on it and claim another number, then find "+
		"the other copy of this holder (%q) and stop it: IDs both copies issued since the clone may repeat (docs/runbook.md, "+
		"\"A holder process was cloned\")", ErrLost, l.Machine, l.Region, l.Token, stored, l.Holder)
}

// memo returns l's memo, made if absent. Called with r.mu held.
func (r *Renewals) memo(l *Lease) *renewalMemo {
	if r.m == nil {
		r.m = map[renewalKey]*renewalMemo{}
	}
	k := keyOf(l)
	m := r.m[k]
	if m == nil {
		m = &renewalMemo{}
		r.m[k] = m
	}
	return m
}
