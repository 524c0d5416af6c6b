package client

import "time"

// buffer holds the IDs received and not yet handed out, oldest first, in a
// ring of int64, with one chunk record per response: where its IDs end and
// when they expire. The hand-out is written by hand rather than with a
// channel or a slice of IDs because it is the whole cost of a warm Next: a
// channel send and receive cost about as much as the mutex and ring
// together, every ID; and a per-chunk deadline makes the age check one
// comparison per call instead of a timestamp per ID. The Client's mutex
// guards a buffer.
type buffer struct {
	ids        []int64 // a power of two long
	mask       uint64
	head, tail uint64 // positions since the start; ids[p&mask]
	// chunks[first:] are the chunks still buffered, oldest first.
	chunks []chunk
	first  int
}

// chunk is the IDs of one response: those before end that are not yet
// handed out, to be dropped when the monotonic clock reaches deadline.
type chunk struct {
	end      uint64
	deadline time.Duration
}

func newBuffer(capacity int) buffer {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return buffer{ids: make([]int64, n), mask: uint64(n - 1)}
}

// len returns the number of IDs buffered, expired ones included.
func (b *buffer) len() int { return int(b.tail - b.head) }

// take hands out the oldest ID that has not expired at now, dropping the
// expired ones before it (counted in *expired).
func (b *buffer) take(now time.Duration, expired *uint64) (int64, bool) {
	for b.first < len(b.chunks) {
		c := &b.chunks[b.first]
		if now < c.deadline {
			id := b.ids[b.head&b.mask]
			b.head++
			if b.head == c.end {
				b.pop()
			}
			return id, true
		}
		*expired += c.end - b.head
		b.head = c.end
		b.pop()
	}
	return 0, false
}

// takeN appends up to n IDs that have not expired at now to dst, as take,
// and lowers *deadline to the earliest deadline of the chunks it took IDs
// from. It is generic so that it appends to a []snowfence.ID directly.
func takeN[T ~int64](b *buffer, dst []T, n int, now time.Duration, expired *uint64, deadline *time.Duration) []T {
	for n > 0 && b.first < len(b.chunks) {
		c := &b.chunks[b.first]
		if now >= c.deadline {
			*expired += c.end - b.head
			b.head = c.end
			b.pop()
			continue
		}
		*deadline = min(*deadline, c.deadline)
		k := min(uint64(n), c.end-b.head)
		for range k {
			dst = append(dst, T(b.ids[b.head&b.mask]))
			b.head++
		}
		n -= int(k)
		if b.head == c.end {
			b.pop()
		}
	}
	return dst
}

// dropExpired drops the chunks expired at now, counting their IDs in
// *expired.
func (b *buffer) dropExpired(now time.Duration, expired *uint64) {
	for b.first < len(b.chunks) && now >= b.chunks[b.first].deadline {
		c := b.chunks[b.first]
		*expired += c.end - b.head
		b.head = c.end
		b.pop()
	}
}

// pop forgets the oldest chunk, whose IDs are all gone.
func (b *buffer) pop() {
	b.first++
	if b.first == len(b.chunks) {
		b.chunks, b.first = b.chunks[:0], 0
	}
}

// push adds the IDs of one response, which must fit, expiring at deadline.
func (b *buffer) push(ids []int64, deadline time.Duration) {
	if len(ids) == 0 {
		return
	}
	if len(b.chunks) == cap(b.chunks) && b.first > 0 {
		n := copy(b.chunks, b.chunks[b.first:])
		b.chunks, b.first = b.chunks[:n], 0
	}
	for _, id := range ids {
		b.ids[b.tail&b.mask] = id
		b.tail++
	}
	b.chunks = append(b.chunks, chunk{end: b.tail, deadline: deadline})
}

// clear drops every ID and returns how many there were.
func (b *buffer) clear() int {
	n := b.len()
	b.head = b.tail
	b.chunks, b.first = b.chunks[:0], 0
	return n
}
