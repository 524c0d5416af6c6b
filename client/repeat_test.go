package client

import (
	"errors"
	"maps"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// stream is a fake holder of one (region, machine) number: it mints like
// the generator, each ID above the one before, a tick later once a tick's
// sequence is used up, in the layout the schedule has in force at the tick.
type stream struct {
	region, machine int
	tick            int64
	seq             int
}

func (s *stream) mint(t *testing.T, sched snowfence.Schedule, epoch time.Time) int64 {
	t.Helper()
	l := sched.LayoutAt(epoch.Add(time.Duration(s.tick) * time.Millisecond))
	if s.seq >= 1<<l.SequenceBits {
		s.tick, s.seq = s.tick+1, 0
		l = sched.LayoutAt(epoch.Add(time.Duration(s.tick) * time.Millisecond))
	}
	id, err := l.Compose(s.tick, s.region, s.machine, s.seq)
	if err != nil {
		t.Fatal(err)
	}
	s.seq++
	return int64(id)
}

// TestMarksProperty: batches of several streams, interleaved at random,
// some minted across the layout change or across a change of number (a
// holder moving from one number to another mid-batch, on a fresh tick),
// are all accepted; a replay of any part of a batch received before,
// alone, followed by new IDs or preceded by new IDs of another stream, is
// refused and leaves the marks as they were.
func TestMarksProperty(t *testing.T) {
	epoch := snowfence.V1().Epoch
	cutover := exampleTime.Add(200 * time.Millisecond)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{Layout: snowfence.V2(), From: cutover})
	startTick := exampleTime.Sub(epoch).Milliseconds()
	cutTick := cutover.Sub(epoch).Milliseconds()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 13))
		// Region 0 holders mint in v1 and v2; the others only once v2
		// (which has region bits) is in force.
		streams := []*stream{
			{region: 0, machine: 1, tick: startTick},
			{region: 0, machine: 300, tick: startTick + 5},
			{region: 3, machine: 1, tick: cutTick},
			{region: 7, machine: 511, tick: cutTick + 2},
		}
		m := newMarks(sched)
		var history [][]int64
		accepted, refused, spanning, preceded, crossing := 0, 0, 0, 0, 0
		for step := range 1500 {
			if len(history) > 0 && rng.IntN(4) == 0 {
				old := history[rng.IntN(len(history))]
				i := rng.IntN(len(old))
				j := i + 1 + rng.IntN(len(old)-i)
				bad := append([]int64(nil), old[i:j]...)
				switch rng.IntN(3) {
				case 0:
					// Preceded by new IDs of another stream, below the
					// repeated ones, so that only a later part of the
					// batch repeats.
					o := streams[rng.IntN(len(streams))]
					var fresh []int64
					for range 1 + rng.IntN(20) {
						fresh = append(fresh, o.mint(t, sched, epoch))
					}
					if m.key(fresh[0]) != m.key(bad[0]) && fresh[len(fresh)-1] < bad[0] {
						bad = append(fresh, bad...)
						preceded++
					}
				case 1:
					// Followed by new IDs of the stream it ends in.
					d, _ := sched.Decode(snowfence.ID(bad[len(bad)-1]))
					for _, s := range streams {
						if s.region == d.RegionNumber && s.machine == d.Machine {
							for range 1 + rng.IntN(20) {
								bad = append(bad, s.mint(t, sched, epoch))
							}
						}
					}
				}
				before := maps.Clone(m.last)
				if why := m.check(bad); why == "" {
					t.Fatalf("seed %d step %d: a batch repeating IDs %d..%d of an earlier one was accepted", seed, step, old[i], old[j-1])
				}
				if !maps.Equal(before, m.last) {
					t.Fatalf("seed %d step %d: a refused batch changed the marks", seed, step)
				}
				refused++
				continue
			}
			s := streams[rng.IntN(len(streams))]
			if adv := rng.IntN(4); adv > 0 {
				s.tick, s.seq = s.tick+int64(adv), 0
			}
			n := 1 + rng.IntN(snowfence.MaxBatch)
			if s.tick >= cutTick-4 && s.tick < cutTick-1 {
				// A batch from the last v1 tick into the first of v2.
				s.tick, s.seq = cutTick-1, max(0, 1<<snowfence.V1().SequenceBits-n/2)
			}
			batch := make([]int64, 0, n)
			for range n {
				batch = append(batch, s.mint(t, sched, epoch))
			}
			if rng.IntN(8) == 0 && s.region == 0 {
				// The holder moves to another region-0 number mid-batch:
				// the new number starts on a fresh tick, above its own
				// IDs before and above the batch so far.
				o := streams[1-s.machine/300]
				last := batch[len(batch)-1]
				d, _ := sched.Decode(snowfence.ID(last))
				o.tick, o.seq = max(o.tick, d.CreatedAt.Sub(epoch).Milliseconds())+1, 0
				for range 1 + rng.IntN(50) {
					batch = append(batch, o.mint(t, sched, epoch))
				}
			}
			if k0, k1 := m.key(batch[0]), m.key(batch[len(batch)-1]); k0 != k1 {
				spanning++
				if k0.layout != k1.layout {
					crossing++
				}
			}
			if why := m.check(batch); why != "" {
				t.Fatalf("seed %d step %d: a sound batch of %d IDs was refused: %s", seed, step, len(batch), why)
			}
			history = append(history, batch)
			accepted++
		}
		if refused < 100 || spanning < 10 || preceded < 10 || crossing < 1 || len(m.last) < 6 {
			t.Fatalf("seed %d: %d accepted, %d refused (%d after new IDs), %d spanning (%d across the layout change), %d streams: the test did not exercise the check",
				seed, accepted, refused, preceded, spanning, crossing, len(m.last))
		}
	}
}

// TestMarksOneStream: the check's verdicts on a few batches of one
// machine, by name.
func TestMarksOneStream(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]int64
		refused bool // the last batch
	}{
		{"increasing", [][]int64{{1, 2, 3}, {4, 5}, {9}}, false},
		{"gap", [][]int64{{1, 2}, {100, 200}}, false},
		{"repeat", [][]int64{{1, 2, 3}, {1, 2, 3}}, true},
		{"overlap by one", [][]int64{{1, 2, 3}, {3, 4, 5}}, true},
		{"older", [][]int64{{10, 11}, {5, 6}}, true},
		{"inside", [][]int64{{1, 5}, {3}}, true},
		{"other machines", [][]int64{{1 << 12, 2 << 12}, {1, 2}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMarks(snowfence.DefaultSchedule())
			for i, b := range tc.batches {
				why := m.check(b)
				last := i == len(tc.batches)-1
				if got := why != ""; got != (last && tc.refused) {
					t.Errorf("batch %d %v: refused = %v (%s); want %v", i, b, got, why, last && tc.refused)
				}
			}
		})
	}
}

// BenchmarkMarksCheck is the cost per answer of Config.Schedule's check,
// for a batch of 1,000 IDs of one machine: two decodes and a map update.
func BenchmarkMarksCheck(b *testing.B) {
	m := newMarks(snowfence.DefaultSchedule())
	l := snowfence.V1()
	batch := make([]int64, snowfence.MaxBatch)
	tick := exampleTime.Sub(l.Epoch).Milliseconds()
	b.ReportAllocs()
	for b.Loop() {
		tick++
		base, _ := l.Compose(tick, 0, 37, 0)
		batch[0], batch[len(batch)-1] = int64(base), int64(base)+int64(len(batch)-1)
		if why := m.check(batch); why != "" {
			b.Fatal(why)
		}
	}
}

// TestRepeatedIDsAcrossResponsesRefused: with Config.Schedule the client
// refuses IDs a server repeats across responses. A server (or something
// between it and the client) that answers two 200s with the same IDs would
// make the client hand the same ID out twice. With Config.Schedule the client
// remembers the last ID received from each machine number, and refuses the
// repeat: the IDs of one machine number only increase.
func TestRepeatedIDsAcrossResponsesRefused(t *testing.T) {
	var replay atomic.Int64
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		replay.Store(0)
		writeBatch(w, &replay, countOf(r)) // 1..n every time
	})
	sched := snowfence.DefaultSchedule()
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MinRefill: 4, MaxBuffer: 4, LowWater: 1, MaxAttempts: 1, Schedule: &sched})
	ctx := ctxT(t)
	seen := map[snowfence.ID]bool{}
	for range 8 {
		id, err := c.Next(ctx)
		if errors.Is(err, ErrUnavailable) {
			if !errors.Is(err, ErrBadResponse) {
				t.Errorf("Next: %v; want the repeat refused as ErrBadResponse", err)
			}
			if st := c.Stats(); st.HandedOut != 4 || st.Failures == 0 {
				t.Errorf("Stats = %+v; want the 4 IDs of the first answer handed out and the repeat counted as a failure", st)
			}
			return // the repeat was refused
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("ID %d handed out twice: the server repeated a batch and the client took it", id)
		}
		seen[id] = true
	}
	t.Errorf("Next gave %d IDs from a server that repeats 1..4 and no error; want the repeat refused", len(seen))
}

// TestRepeatedIDsTrustedWithoutSchedule: without Config.Schedule the
// client trusts the servers not to repeat IDs, as documented: a repeated
// answer is handed out again.
func TestRepeatedIDsTrustedWithoutSchedule(t *testing.T) {
	var replay atomic.Int64
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		replay.Store(0)
		writeBatch(w, &replay, countOf(r))
	})
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MinRefill: 4, MaxBuffer: 4, LowWater: 1, MaxAttempts: 1})
	ctx := ctxT(t)
	var got []snowfence.ID
	for range 8 {
		id, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %v: %v; want no check without Config.Schedule", got, err)
		}
		got = append(got, id)
	}
	if got[0] != 1 || got[4] != 1 {
		t.Errorf("Next gave %v; want 1..4 twice (the server repeated them and nothing checks)", got)
	}
}
