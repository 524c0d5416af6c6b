package snowfence_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

var uuidStart = time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)

// 1,000,000 UUIDs from one generator strictly increase in byte order, with
// the clock frozen for long runs (far past 4,096 per millisecond), moving
// on, and stepping back 3 ms; each carries the clock's millisecond, or the
// last one used while the clock is behind it.
func TestUUIDv7Monotonic(t *testing.T) {
	clk := fakeclock.New(uuidStart)
	g := snowfence.NewUUIDGenerator(clk)
	const total = 1_000_000
	var prev snowfence.UUID
	var lastMs int64
	stepped := false
	for i := range total {
		switch {
		case i == total/2:
			clk.Step(-3 * time.Millisecond)
			stepped = true
		case i%50_000 == 0 && i > 0:
			clk.Advance(time.Millisecond)
		}
		u := g.Next()
		if i > 0 && bytes.Compare(prev[:], u[:]) >= 0 {
			t.Fatalf("UUID %d %s is not above the one before, %s", i, u, prev)
		}
		if u.Version() != 7 || u.Variant() != snowfence.VariantRFC9562 {
			t.Fatalf("UUID %s: version %d variant %s", u, u.Version(), u.Variant())
		}
		tm, _ := u.Time()
		want := max(clk.Now().WallMs, lastMs)
		if tm.UnixMilli() != want {
			t.Fatalf("UUID %d carries %d ms, want %d (clock %d, last %d)", i, tm.UnixMilli(), want, clk.Now().WallMs, lastMs)
		}
		lastMs = tm.UnixMilli()
		prev = u
	}
	if !stepped {
		t.Fatal("the clock never stepped back")
	}
	// After the step back the clock caught up and the generator follows
	// it again.
	if got, want := lastMs, clk.Now().WallMs; got != want {
		t.Errorf("last UUID at %d ms, clock at %d", got, want)
	}
}

// google/uuid reads ours as version 7, RFC variant, at the clock's
// millisecond.
func TestUUIDv7ParsedByGoogle(t *testing.T) {
	clk := fakeclock.New(uuidStart)
	g := snowfence.NewUUIDGenerator(clk)
	for i := range 2000 {
		if i%100 == 0 {
			clk.Advance(7 * time.Millisecond)
		}
		u := g.Next()
		gu, err := uuid.Parse(u.String())
		if err != nil {
			t.Fatalf("google/uuid cannot parse %s: %v", u, err)
		}
		if gu.Version() != 7 || gu.Variant() != uuid.RFC4122 {
			t.Fatalf("google/uuid reads %s as version %d, variant %s", u, gu.Version(), gu.Variant())
		}
		sec, nsec := gu.Time().UnixTime()
		if got, want := time.Unix(sec, nsec).UnixMilli(), clk.Now().WallMs; got != want {
			t.Fatalf("google/uuid reads %s at %d ms, want %d", u, got, want)
		}
		gb, _ := gu.MarshalBinary()
		if !bytes.Equal(gb, u[:]) {
			t.Fatalf("google/uuid's bytes %x differ from ours %x", gb, u[:])
		}
	}
}

// Concurrent callers get distinct UUIDs that, taken in the order the
// generator handed them out, increase: each goroutine's own sequence
// increases, and all are distinct.
func TestUUIDv7Concurrent(t *testing.T) {
	clk := fakeclock.New(uuidStart)
	g := snowfence.NewUUIDGenerator(clk)
	const workers, each = 8, 20_000
	out := make([][]snowfence.UUID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i%1000 == 0 && w == 0 {
					clk.Advance(time.Millisecond)
				}
				if i%3 == 0 {
					out[w] = g.AppendN(out[w], 3)
				} else {
					out[w] = append(out[w], g.Next())
				}
			}
		}()
	}
	wg.Wait()
	seen := map[snowfence.UUID]bool{}
	for w, us := range out {
		for i, u := range us {
			if seen[u] {
				t.Fatalf("UUID %s handed out twice", u)
			}
			seen[u] = true
			if i > 0 && us[i-1].Compare(u) >= 0 {
				t.Fatalf("worker %d: UUID %d %s not above %s", w, i, u, us[i-1])
			}
		}
	}
}

func TestUUIDv7AppendN(t *testing.T) {
	g := snowfence.NewUUIDGenerator(fakeclock.New(uuidStart))
	us := g.AppendN(nil, 1000)
	if len(us) != 1000 {
		t.Fatalf("AppendN(1000) gave %d", len(us))
	}
	for i := 1; i < len(us); i++ {
		if us[i-1].Compare(us[i]) >= 0 {
			t.Fatalf("UUID %d %s not above %s", i, us[i], us[i-1])
		}
	}
	if got := g.AppendN(us[:0], 0); len(got) != 0 {
		t.Errorf("AppendN(0) appended %d", len(got))
	}
	if next := g.Next(); next.Compare(us[999]) <= 0 {
		t.Errorf("Next after AppendN: %s not above %s", next, us[999])
	}
}
