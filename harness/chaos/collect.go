package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/harness/chaos/oracle"
)

// collector receives every acknowledged ID of a scenario: it keeps them for
// the in-memory uniqueness check, checks that each lane's IDs increase, and
// hands them to the PostgreSQL oracle.
type collector struct {
	mu        sync.Mutex
	ids       []int64
	last      map[lane]int64
	order     int64    // IDs not above their lane's previous one
	orderEx   []string // the first few, for the report
	ahead     int64    // IDs whose timestamp is after the moment they arrived
	oracle    *oracle.Oracle
	layout    snowfence.Layout
	issued    []oracle.Issued // scratch for the oracle
	minSrc    map[int32]int64
	maxSrc    map[int32]int64
	oracleErr error // the first error Add returned
}

// A lane is a sequence of IDs that must increase: one library generator's
// stream (caller −1), or what one caller got from one service, request
// after request.
type lane struct{ src, caller int32 }

func newCollector(o *oracle.Oracle) *collector {
	return &collector{last: map[lane]int64{}, oracle: o, layout: snowfence.V1(),
		minSrc: map[int32]int64{}, maxSrc: map[int32]int64{}}
}

// record takes ids acknowledged by src to caller. With recvMs > 0 it also
// checks that no ID's timestamp is after recvMs (the service's clock is
// the harness's: no ID may borrow from the future).
func (c *collector) record(src, caller int32, ids []int64, recvMs int64) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, ids...)
	lo, hi := slices.Min(ids), slices.Max(ids)
	if m, ok := c.minSrc[src]; !ok || lo < m {
		c.minSrc[src] = lo
	}
	if m, ok := c.maxSrc[src]; !ok || hi > m {
		c.maxSrc[src] = hi
	}
	k := lane{src, caller}
	prev, seen := c.last[k]
	for _, id := range ids {
		if seen && id <= prev {
			c.order++
			if len(c.orderEx) < 5 {
				c.orderEx = append(c.orderEx, fmt.Sprintf("source %d lane %d: %d after %d", src, caller, id, prev))
			}
		}
		prev, seen = id, true
		if recvMs > 0 && c.layout.TimeOf(snowfence.ID(id)).UnixMilli() > recvMs {
			c.ahead++
		}
	}
	c.last[k] = prev
	c.issued = c.issued[:0]
	for _, id := range ids {
		c.issued = append(c.issued, oracle.Issued{ID: id, Source: src})
	}
	if err := c.oracle.Add(c.issued); err != nil && c.oracleErr == nil {
		c.oracleErr = err
	}
}

// span is the lowest and highest ID src issued; ok is false if none.
func (c *collector) span(src int32) (lo, hi int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lo, ok = c.minSrc[src]
	return lo, c.maxSrc[src], ok
}

// perTick returns, for IDs of machine number machine, how many ticks had
// any and the most IDs one tick had.
func (c *collector) perTick(machine int) (ticks int, most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[int64]int{}
	for _, id := range c.ids {
		f := c.layout.Split(snowfence.ID(id))
		if f.Machine == machine {
			n[f.Tick]++
		}
	}
	for _, v := range n {
		most = max(most, v)
	}
	return len(n), most
}

// countBetween counts the IDs whose timestamp is in [lo, hi).
func (c *collector) countBetween(lo, hi time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, id := range c.ids {
		if t := c.layout.TimeOf(snowfence.ID(id)); !t.Before(lo) && t.Before(hi) {
			n++
		}
	}
	return n
}

// machinesBetween says, of the IDs whose timestamp is in [lo, hi), which
// machine numbers issued them, how many each and the first and last
// stamp: what a failed quiet-window check reports.
func (c *collector) machinesBetween(lo, hi time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	type span struct {
		n           int
		first, last time.Time
	}
	by := map[int]*span{}
	for _, id := range c.ids {
		t := c.layout.TimeOf(snowfence.ID(id))
		if t.Before(lo) || !t.Before(hi) {
			continue
		}
		m := c.layout.Split(snowfence.ID(id)).Machine
		s := by[m]
		if s == nil {
			s = &span{first: t, last: t}
			by[m] = s
		}
		s.n++
		if t.Before(s.first) {
			s.first = t
		}
		if t.After(s.last) {
			s.last = t
		}
	}
	ms := slices.Sorted(maps.Keys(by))
	var out []string
	for _, m := range ms {
		s := by[m]
		out = append(out, fmt.Sprintf("machine %d: %d IDs %s … %s", m, s.n, s.first.UTC().Format("15:04:05.000"), s.last.UTC().Format("15:04:05.000")))
	}
	return strings.Join(out, "; ")
}

// countOnBetween counts the IDs of the machine numbers ms whose timestamp
// is in [lo, hi).
func (c *collector) countOnBetween(ms []int, lo, hi time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, id := range c.ids {
		if t := c.layout.TimeOf(snowfence.ID(id)); !t.Before(lo) && t.Before(hi) && slices.Contains(ms, c.layout.Split(snowfence.ID(id)).Machine) {
			n++
		}
	}
	return n
}
