package snowfence

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
)

// UUIDv7 counter (RFC 9562 §6.2, method 1: a fixed-length dedicated
// counter). The counter takes the 12 bits of rand_a and the top 30 bits of
// rand_b; the last 32 bits of rand_b are fresh random bits in every UUID.
const (
	uuidCounterBits = 42
	uuidCounterMax  = 1<<uuidCounterBits - 1
	// uuidSeedMask keeps the seed's top bit clear, so at least 2^41
	// increments fit after a seed before the counter overflows.
	uuidSeedMask = 1<<(uuidCounterBits-1) - 1
	// uuidMaxMs is the largest instant 48 bits hold.
	uuidMaxMs = 1<<48 - 1
	// uuidRandBuf is how many random bytes a generator draws from
	// crypto/rand at a time: 4 per UUID, 8 more per new millisecond.
	uuidRandBuf = 512
)

// A UUIDGenerator makes UUIDv7 values (RFC 9562 §5.7) on a Clock. It needs
// no lease: a UUIDv7's uniqueness rests on its random bits, not on a
// machine number. Create one with NewUUIDGenerator; the zero value is not
// usable. It is safe for concurrent use, and the UUIDs of one generator
// strictly increase in byte order (so in a uuid column) in the order its
// calls return.
//
// # Layout and method
//
// The first 48 bits are the clock's Unix milliseconds, then the version
// (7), 12 bits rand_a, the variant (10) and 62 bits rand_b. Of RFC 9562
// §6.2's three ways to stay monotonic within a millisecond, this is method
// 1, a fixed-length dedicated counter, of the largest length the RFC
// suggests: 42 bits, all of rand_a and the top 30 bits of rand_b. The last
// 32 bits are fresh from crypto/rand in every UUID. At each new millisecond
// the counter is seeded from crypto/rand with its top bit clear, and every
// further UUID in that millisecond adds one.
//
// Why this method: method 3 (the sub-millisecond fraction in rand_a) gives
// only 4,096 steps per millisecond and needs a clock finer than the Clock
// seam's milliseconds, and past 4,096 per millisecond it must borrow from
// the timestamp; method 2 (monotonic random, adding a random increment to
// the previous value) makes every UUID's order depend on the size of random
// increments and can run out within a millisecond after a large draw. A
// counter with its top bit clear at each seed has room for 2^41 UUIDs in
// one millisecond, more than any process makes, so it never wraps, and the
// randomly seeded counter plus 32 random bits leave 73 unpredictable bits
// in the first UUID of a millisecond and 32 in each later one.
//
// # Clock steps
//
// The generator keeps the last timestamp it used. While the clock reads
// that millisecond or earlier — a step back of any size — it keeps that
// timestamp and goes on counting, so its UUIDs never go back in time or in
// order; once the clock passes it, the generator follows the clock again.
// After a large step back the UUIDs' timestamps therefore stay at the last
// one until the clock catches up. Should the counter ever reach its
// capacity, the generator advances its timestamp by one millisecond ahead
// of the clock and seeds the counter again, as RFC 9562 §6.2 allows. It
// never waits and never fails.
//
// Instants before 1970 are written as 0, and after the 48 bits' end (year
// 10889) as its last millisecond. There the timestamp cannot advance: when
// the counter fills at that last millisecond the 32 random bits count on
// instead, and after 2^32 more UUIDs at that instant the last one repeats
// — the one way to make this generator repeat, which needs a clock that
// reads past the year 10889 and 2^41 UUIDs in its last millisecond.
type UUIDGenerator struct {
	clock Clock

	mu      sync.Mutex
	lastMs  int64
	counter uint64
	tail    uint32 // the last UUID's random 32 bits
	rnd     [uuidRandBuf]byte
	rndAt   int // next unused byte of rnd; len(rnd) when empty
}

// NewUUIDGenerator returns a UUIDv7 generator on clock; nil means
// SystemClock().
func NewUUIDGenerator(clock Clock) *UUIDGenerator {
	if clock == nil {
		clock = SystemClock()
	}
	g := &UUIDGenerator{clock: clock, lastMs: -1}
	g.rndAt = len(g.rnd)
	return g
}

// Next returns a new UUIDv7, greater than every UUID the generator made
// before.
func (g *UUIDGenerator) Next() UUID {
	ms := g.clock.Now().WallMs
	g.mu.Lock()
	u := g.next(ms)
	g.mu.Unlock()
	return u
}

// AppendN appends n new UUIDv7 values to dst, in increasing order, and
// returns the extended slice. They are made under one lock and one clock
// reading. n ≤ 0 appends nothing.
func (g *UUIDGenerator) AppendN(dst []UUID, n int) []UUID {
	if n <= 0 {
		return dst
	}
	ms := g.clock.Now().WallMs
	g.mu.Lock()
	for range n {
		dst = append(dst, g.next(ms))
	}
	g.mu.Unlock()
	return dst
}

// next makes one UUID for a clock reading of ms. g.mu must be held.
func (g *UUIDGenerator) next(ms int64) UUID {
	ms = min(max(ms, 0), uuidMaxMs)
	switch {
	case ms > g.lastMs:
		g.lastMs = ms
		g.counter = g.seed()
	case g.counter == uuidCounterMax && g.lastMs < uuidMaxMs:
		// Never seen in practice (2^41 UUIDs in one millisecond at
		// least); RFC 9562 §6.2 allows running the timestamp ahead.
		g.lastMs++
		g.counter = g.seed()
	case g.counter < uuidCounterMax:
		g.counter++
	}
	if g.lastMs == uuidMaxMs && g.counter == uuidCounterMax {
		// The last instant 48 bits hold (a clock past the year 10889),
		// the counter full: the random tail counts on instead, so order
		// holds for 2^32 more UUIDs at most; past that the last UUID
		// repeats (see the type's doc).
		g.tail += min(1, ^g.tail) // stops at its maximum
	} else {
		g.tail = g.random32()
	}
	var u UUID
	c := g.counter
	// unix_ts_ms(48) | ver(4) | counter bits 41..30 (rand_a)
	binary.BigEndian.PutUint64(u[:8], uint64(g.lastMs)<<16|0x7<<12|c>>30)
	// var(2) | counter bits 29..0 | random(32)
	binary.BigEndian.PutUint64(u[8:], 0b10<<62|(c&(1<<30-1))<<32|uint64(g.tail))
	return u
}

// seed draws a counter seed with its top bit clear. g.mu must be held.
func (g *UUIDGenerator) seed() uint64 {
	hi := uint64(g.random32())
	lo := uint64(g.random32())
	return (hi<<32 | lo) & uuidSeedMask
}

// random32 takes 4 bytes from the buffer, refilling it from crypto/rand
// (which never fails) when it runs out. g.mu must be held.
func (g *UUIDGenerator) random32() uint32 {
	if g.rndAt+4 > len(g.rnd) {
		rand.Read(g.rnd[:])
		g.rndAt = 0
	}
	v := binary.BigEndian.Uint32(g.rnd[g.rndAt:])
	g.rndAt += 4
	return v
}
