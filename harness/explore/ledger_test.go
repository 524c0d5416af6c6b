package explore

import (
	"fmt"
	"strings"
	"sync"

	"github.com/snowfence/snowfence"
)

// duplicateMarker starts the failure message of a duplicate ID;
// scripts/prove-search looks for it.
const duplicateMarker = "EXPLORE DUPLICATE"

// orderMarker starts the failure message of a generator whose IDs did not
// strictly increase.
const orderMarker = "EXPLORE ORDER"

// minted says who minted an ID.
type minted struct {
	holder int // index in the world's holders, or a clone's (clone_test.go)
	gen    int // which generation of that holder (a restart makes a new one)
	// extra is 0 for the generation's own generator, i for the i-th
	// generator built on its keeper after it (holder.extras).
	extra int
	step  int
	clone bool // a clone's: not in batches or ends (the journal oracle's samples)
	// window is the clone whose window was open when the ID was minted
	// by it or by its original (0: none; see clone).
	window int
}

// ledger holds every ID minted in one world.
type ledger struct {
	ids     map[snowfence.ID]minted
	checked uint64
	// batches are the batches recorded, in order, and ends the first and
	// last ID of each holder generation, for the journal oracle's samples.
	batches []batch
	ends    map[[2]int]*[2]snowfence.ID // by (holder, generation)
	// tolerate, if set, lets a duplicate through (a clone's window);
	// tolerated counts them.
	tolerate  func(prev, by minted) bool
	tolerated int
}

// batch is one batch of IDs, all minted by one holder generation.
type batch struct {
	ids []snowfence.ID
	by  minted
}

func newLedger() *ledger {
	return &ledger{ids: make(map[snowfence.ID]minted), ends: make(map[[2]int]*[2]snowfence.ID)}
}

// record adds the IDs minted by one batch, whichever store's holder minted
// them: a world's IDs are one ID space. If one was seen before and
// tolerate does not let it through, it stops there and returns it and its
// first minter, with dup true. A clone's batch is kept out of batches and
// ends.
func (l *ledger) record(ids []snowfence.ID, by minted) (prev minted, id snowfence.ID, dup bool) {
	for _, id := range ids {
		l.checked++
		if prev, ok := l.ids[id]; ok {
			if l.tolerate != nil && l.tolerate(prev, by) {
				l.tolerated++
				if prev.clone {
					l.ids[id] = by // the journal oracle looks holders' IDs up
				}
				continue
			}
			return prev, id, true
		}
		l.ids[id] = by
	}
	if len(ids) > 0 && !by.clone {
		l.batches = append(l.batches, batch{ids: ids, by: by})
		key := [2]int{by.holder, by.gen}
		if e := l.ends[key]; e != nil {
			e[1] = ids[len(ids)-1]
		} else {
			l.ends[key] = &[2]snowfence.ID{ids[0], ids[len(ids)-1]}
		}
	}
	return minted{}, 0, false
}

// decode describes an ID under both layouts, since the world's schedules
// may differ.
func decode(id snowfence.ID) string {
	f1, f2 := snowfence.V1().Split(id), snowfence.V2().Split(id)
	return fmt.Sprintf("%s; as v1 machine %d seq %d; as v2 region %d machine %d seq %d",
		snowfence.V1().TimeOf(id).UTC().Format("15:04:05.000"), f1.Machine, f1.Sequence, f2.Region, f2.Machine, f2.Sequence)
}

// actionLog keeps the last entries of a world's actions, and the keepers'
// warnings. Safe for concurrent use.
type actionLog struct {
	mu      sync.Mutex
	entries []string
	total   int
}

var keptActions = 50

func (a *actionLog) add(step int, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total++
	a.entries = append(a.entries, fmt.Sprintf("%4d  %s", step, fmt.Sprintf(format, args...)))
	if len(a.entries) > keptActions {
		a.entries = a.entries[len(a.entries)-keptActions:]
	}
}

func (a *actionLog) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("last %d of %d actions:\n%s", len(a.entries), a.total, strings.Join(a.entries, "\n"))
}
