// Package snowfence mints 64-bit, roughly time-ordered IDs in memory, with no
// network call per ID, and keeps one promise whatever happens to clocks and
// processes: no ID is ever issued twice.
//
// An ID under the v1 layout:
//
//	bit 63 | 62 ........ 22 | 21 ...... 12 | 11 ....... 0
//	  0    | ms since epoch |  machine(10) | sequence(12)
//	       |    (41 bits)   |  0..1023     | 0..4095
//	id = (ts << 22) | (machine << 12) | seq     epoch 2026-01-01T00:00:00Z
//
// and under v2, which adds 3 region bits and keeps the timestamp where v1
// has it:
//
//	id = (ts << 22) | (region << 19) | (machine << 10) | seq
//
// 2026-09-26T12:00:00.000Z, machine 37, sequence 5 is 97301141913751557 in
// v1. A Layout is data (epoch, unit, widths), so other splits — 10 ms units
// like Sonyflake, a 13-bit shard like Instagram — are a value, not code. A
// Schedule changes layouts at an instant without a flag day: decoding finds
// the timestamp first, then the layout in force at it.
//
// IDs travel in JSON as strings: JavaScript numbers are exact only to 2^53−1.
//
// # UUIDs
//
// For tables keyed by a uuid column, UUID is a 128-bit value type, and two
// forms sort by time in one. A UUIDGenerator makes UUIDv7 values (RFC 9562)
// on the Clock with no lease: a 42-bit counter seeded at random each
// millisecond keeps one generator's UUIDs strictly increasing, within a
// millisecond and across clock steps back. Schedule.ToUUID gives an ID's
// UUIDv8 form — the ID's Unix milliseconds first, then the whole ID and an
// 11-bit check — which sorts exactly as the BIGINTs do and beside the UUIDv7
// values of the same millisecond; Schedule.FromUUID reads it back and
// refuses any UUID that is not one. The doc comments of UUID,
// UUIDGenerator and Schedule.ToUUID draw the bit layouts.
//
// # Minting
//
// A Generator holds a machine number (from a LeaseView), the last issued
// timestamp and a sequence. Each call checks, in order: the lease (fenced if
// the last acknowledged renewal is older than the self-fence window on the
// monotonic clock), the wall clock against the last issued timestamp, the
// layout in force, the lease's start and its reserved mark, and the clock
// policy; only then does it commit. A refused call changes nothing.
//
// # Clock steps
//
// The wall clock is for telling time and the monotonic clock is for
// measuring it. A step back of at most Config.MaxBackwardWait (5 ms) is
// waited out; a larger one is refused with a *ClockBackwardsError carrying the
// step, and Health reports the generator unhealthy until the clock passes the
// last issued timestamp again. When a tick's sequence is used up the call
// waits for the next tick, sleeping and then spinning so that little of the
// next millisecond is wasted. A forward jump (the wall clock running ahead of
// the monotonic clock) is counted and logged: uniqueness holds, but the
// timestamps run ahead of true time. Clock sync serves ordering across
// machines only; ClockPolicy decides whether an untrustworthy clock stops
// issuing. Its zero value, ClockRequire, refuses while the kernel reports
// the clock unsynchronised or more than 5 ms off, and after a forward jump
// until the clock is back in sync; package node chooses ClockWarn for the
// embedded etcd, one host alone. The kernel's leap-second state is read
// with the rest (LeapState): a leap second the kernel steps for costs up to
// a second of refusals, a smeared one nothing.
//
// # Machine-number leases
//
// Package lease leases machine numbers from a store (etcdstore by default)
// and fences each holder in time: the store keeps, per number, a high-water
// mark written before use, compared on a fencing token, so two holders of one
// number — a paused one and its successor, or a process and its restarted
// self — never issue the same timestamp. A keeper feeds one generator only
// (LeaseView.Bind: a second New on it fails with ErrLeaseBound), since the
// generator's last tick and sequence are the only record of what it issued;
// its owner records the end of the last issued timestamp
// (Generator.LastIssued) when it closes the keeper. The generator reads its
// lease through LeaseView alone; the lease never reads the generator.
// Static assigns a number by hand for tests and single processes; every rule
// a leased fleet has checked for it (distinct numbers, one shared schedule,
// one generator per number, clocks that never go back across a restart) is
// then the operator's part, as Static's doc lists. LeaseView, Grant and
// Static are in leaseview.go.
//
// # Concurrency
//
// A Generator is safe for concurrent use; its IDs strictly increase in the
// order calls return. Waits happen outside its lock. A Clock must be safe for
// concurrent use; all time flows through it, so package fakeclock can replay
// any clock story deterministically.
package snowfence
