package client

import (
	"fmt"

	"github.com/snowfence/snowfence"
)

// streamKey names one stream of IDs: a machine number of a region, in a
// layout. The IDs of one stream strictly increase over time, across
// holders of the number (see Config.Schedule).
type streamKey struct {
	layout          string
	region, machine int
}

// run is a stretch of a batch whose IDs are of one stream.
type run struct {
	key         streamKey
	first, last int64
}

// marks remembers, per stream, the last ID the Client received, and
// refuses a batch that does not start above it: the check of
// Config.Schedule. At most layouts × regions × machines streams are
// remembered. The refill goroutine owns a marks.
type marks struct {
	schedule snowfence.Schedule
	last     map[streamKey]int64
	runs     []run // scratch of check
}

func newMarks(s snowfence.Schedule) *marks {
	return &marks{schedule: s, last: make(map[streamKey]int64)}
}

// key decodes the stream of id, which is positive (parseBatch checked).
func (m *marks) key(id int64) streamKey {
	d, _ := m.schedule.Decode(snowfence.ID(id))
	return streamKey{d.Layout, d.RegionNumber, d.Machine}
}

// check takes the IDs of one answer, strictly increasing, and returns why
// some of them may have been received before ("" if none can have been),
// remembering their marks only if none can. A batch's first and last IDs
// are decoded; only when they are of different streams (a batch minted
// across a change of layout or of machine number) is every ID decoded, to
// split the batch into runs of one stream, each checked as a batch.
func (m *marks) check(ids []int64) string {
	first, last := ids[0], ids[len(ids)-1]
	m.runs = append(m.runs[:0], run{m.key(first), first, last})
	if k := m.key(last); k != m.runs[0].key {
		m.runs = m.runs[:0]
		for _, id := range ids {
			k := m.key(id)
			if n := len(m.runs); n > 0 && m.runs[n-1].key == k {
				m.runs[n-1].last = id
				continue
			}
			m.runs = append(m.runs, run{k, id, id})
		}
	}
	// A stream's later runs in the batch start above its earlier ones'
	// ends (the batch increases), so checking each against the mark from
	// before the batch is enough.
	for _, r := range m.runs {
		if prev, ok := m.last[r.key]; ok && r.first <= prev {
			return fmt.Sprintf("ID %d is not above ID %d, the last received before from machine %d of region %d (layout %s), whose IDs only increase: the answer repeats IDs (a replayed or duplicated response)",
				r.first, prev, r.key.machine, r.key.region, r.key.layout)
		}
	}
	for _, r := range m.runs {
		m.last[r.key] = r.last
	}
	return ""
}
