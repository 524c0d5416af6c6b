package snowfence_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// v8Schedules are schedules of every layout kind: the presets, a cutover
// between them, and a layout with another epoch, a 10 ms unit and other
// widths.
func v8Schedules() map[string]snowfence.Schedule {
	tens := snowfence.Layout{Name: "tens", Epoch: time.Date(2014, 9, 1, 0, 0, 0, 0, time.UTC), Unit: 10 * time.Millisecond,
		TimeBits: 39, RegionBits: 2, MachineBits: 14, SequenceBits: 8}
	return map[string]snowfence.Schedule{
		"v1":    snowfence.DefaultSchedule(),
		"v2":    snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V2()}),
		"v1,v2": snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), Layout: snowfence.V2()}),
		"tens":  snowfence.MustSchedule(snowfence.Step{Layout: tens}),
	}
}

// randomID composes an ID of the layout in force at a random tick, with
// random fields.
func randomID(r *rand.Rand, s snowfence.Schedule) snowfence.ID {
	steps := s.Steps()
	l := steps[0].Layout
	tick := r.Int64N(int64(1) << l.TimeBits)
	at := l.Epoch.Add(time.Duration(tick) * l.Unit)
	if l.Unit == 0 {
		at = l.Epoch.Add(time.Duration(tick) * time.Millisecond)
	}
	l = s.LayoutAt(at)
	id, err := l.Compose(tick, r.IntN(1<<l.RegionBits), r.IntN(1<<l.MachineBits), r.IntN(1<<l.SequenceBits))
	if err != nil {
		panic(err)
	}
	return id
}

// The UUIDv8 form round-trips for random IDs of every layout, carries the
// ID's instant in its first 48 bits, is version 8 of the RFC variant for
// google/uuid too, and sorts as the IDs do.
func TestUUIDv8RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 8))
	for name, s := range v8Schedules() {
		t.Run(name, func(t *testing.T) {
			ids := []snowfence.ID{0, 1<<63 - 1}
			for range 20_000 {
				ids = append(ids, randomID(r, s))
			}
			us := make([]snowfence.UUID, len(ids))
			for i, id := range ids {
				u, err := s.ToUUID(id)
				if err != nil {
					t.Fatalf("ToUUID(%d): %v", id, err)
				}
				back, err := s.FromUUID(u)
				if err != nil || back != id {
					t.Fatalf("FromUUID(ToUUID(%d) = %s) = %d, %v", id, u, back, err)
				}
				d, _ := s.Decode(id)
				tm, ok := u.Time()
				if !ok || !tm.Equal(d.CreatedAt) {
					t.Fatalf("%s (ID %d): Time() = %v, %v; the ID's instant is %v", u, id, tm, ok, d.CreatedAt)
				}
				gu, err := uuid.Parse(u.String())
				if err != nil || gu.Version() != 8 || gu.Variant() != uuid.RFC4122 {
					t.Fatalf("google/uuid reads %s as version %d variant %s, %v", u, gu.Version(), gu.Variant(), err)
				}
				us[i] = u
			}
			byID := make([]int, len(ids))
			byUUID := make([]int, len(ids))
			for i := range ids {
				byID[i], byUUID[i] = i, i
			}
			slices.SortFunc(byID, func(a, b int) int { return compareInt(int64(ids[a]), int64(ids[b])) })
			slices.SortFunc(byUUID, func(a, b int) int { return us[a].Compare(us[b]) })
			for i := range byID {
				if ids[byID[i]] != ids[byUUID[i]] {
					t.Fatalf("position %d: by ID %d, by UUID %d (%s)", i, ids[byID[i]], ids[byUUID[i]], us[byUUID[i]])
				}
			}
		})
	}
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Changing any one hexadecimal digit of a UUIDv8 form, to any other digit,
// gives a UUID FromUUID refuses: never another ID.
func TestUUIDv8OneDigitChanged(t *testing.T) {
	s := snowfence.DefaultSchedule()
	r := rand.New(rand.NewPCG(8, 14))
	const hex = "0123456789abcdef"
	for range 300 {
		id := randomID(r, s)
		u, _ := s.ToUUID(id)
		text := []byte(u.String())
		for i, c := range text {
			if c == '-' {
				continue
			}
			for _, d := range []byte(hex) {
				if d == c {
					continue
				}
				changed := slices.Clone(text)
				changed[i] = d
				v := snowfence.MustParseUUID(string(changed))
				if got, err := s.FromUUID(v); !errors.Is(err, snowfence.ErrForeignUUID) {
					t.Fatalf("%s (from %s, ID %d, digit %d %c→%c): FromUUID = %d, %v; want ErrForeignUUID", v, u, id, i, c, d, got, err)
				}
			}
		}
	}
}

// FromUUID refuses UUIDs that are not ours: UUIDv7, v4, random v8, other
// variants, and our form made under a schedule of another epoch.
func TestUUIDv8Foreign(t *testing.T) {
	s := snowfence.DefaultSchedule()
	g := snowfence.NewUUIDGenerator(fakeclock.New(uuidStart))
	ours, _ := s.ToUUID(snowfence.MustParseID("97301141913751557"))
	otherVariant := ours
	otherVariant[8] = otherVariant[8]&0x3f | 0xc0
	tens := v8Schedules()["tens"]
	otherEpoch, _ := tens.ToUUID(snowfence.MustParseID("97301141913751557"))
	foreign := map[string]snowfence.UUID{
		"v7":            g.Next(),
		"v4":            snowfence.UUID(uuid.New()),
		"nil":           {},
		"max":           snowfence.MustParseUUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
		"other variant": otherVariant,
		"other epoch":   otherEpoch,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		var u snowfence.UUID
		for j := range u {
			u[j] = byte(r.Uint32())
		}
		u[6] = u[6]&0x0f | 0x80
		u[8] = u[8]&0x3f | 0x80
		foreign["random v8 "+string(rune('a'+i%26))+string(rune('a'+i/26))] = u
	}
	for name, u := range foreign {
		if id, err := s.FromUUID(u); !errors.Is(err, snowfence.ErrForeignUUID) {
			t.Errorf("%s %s: FromUUID = %d, %v; want ErrForeignUUID", name, u, id, err)
		}
	}
	if id, err := tens.FromUUID(otherEpoch); err != nil || id != snowfence.MustParseID("97301141913751557") {
		t.Errorf("under its own schedule: %d, %v", id, err)
	}
	if _, err := s.ToUUID(-1); !errors.Is(err, snowfence.ErrInvalidID) {
		t.Errorf("ToUUID(-1): %v", err)
	}
	var zero snowfence.Schedule
	if _, err := zero.ToUUID(1); !errors.Is(err, snowfence.ErrInvalidLayout) {
		t.Errorf("zero Schedule ToUUID: %v", err)
	}
	if _, err := zero.FromUUID(ours); !errors.Is(err, snowfence.ErrInvalidLayout) {
		t.Errorf("zero Schedule FromUUID: %v", err)
	}
}

// A UUIDv7 and a UUIDv8 of the same millisecond sort next to each other
// among the values of other milliseconds (the v7 first, version 7 < 8).
func TestUUIDv7AndV8SameMillisecondAdjacent(t *testing.T) {
	mix, pairs := sameMillisecondMix(t)
	slices.SortFunc(mix, func(a, b snowfence.UUID) int { return a.Compare(b) })
	checkAdjacent(t, mix, pairs)
}

// sameMillisecondMix returns UUIDv7 and UUIDv8 values of 50 different
// milliseconds, one of each per millisecond, shuffled, and the pairs.
func sameMillisecondMix(t *testing.T) ([]snowfence.UUID, [][2]snowfence.UUID) {
	t.Helper()
	s := snowfence.DefaultSchedule()
	clk := fakeclock.New(uuidStart)
	g := snowfence.NewUUIDGenerator(clk)
	r := rand.New(rand.NewPCG(7, 8))
	var mix []snowfence.UUID
	var pairs [][2]snowfence.UUID
	for range 50 {
		clk.Advance(time.Duration(1+r.IntN(3)) * time.Millisecond)
		v7 := g.Next()
		id, err := snowfence.V1().ComposeAt(clk.Time(), 0, r.IntN(1024), r.IntN(4096))
		if err != nil {
			t.Fatal(err)
		}
		v8, _ := s.ToUUID(id)
		mix = append(mix, v7, v8)
		pairs = append(pairs, [2]snowfence.UUID{v7, v8})
	}
	r.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	return mix, pairs
}

// checkAdjacent checks that each pair sits side by side, v7 first, in
// sorted.
func checkAdjacent(t *testing.T, sorted []snowfence.UUID, pairs [][2]snowfence.UUID) {
	t.Helper()
	at := map[snowfence.UUID]int{}
	for i, u := range sorted {
		at[u] = i
	}
	for _, p := range pairs {
		if at[p[1]] != at[p[0]]+1 {
			t.Errorf("v7 %s at %d, v8 %s of the same millisecond at %d; want next to each other", p[0], at[p[0]], p[1], at[p[1]])
		}
	}
}
