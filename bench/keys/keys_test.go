package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/publicid"
)

func TestNewPublicID(t *testing.T) {
	for range 100 {
		s, err := newPublicID()
		if err != nil {
			t.Fatal(err)
		}
		r, err := publicid.ParseRandom(s)
		if err != nil || r.Prefix() != "order" || len(s) != len("order_")+26 {
			t.Fatalf("newPublicID() = %q: %v", s, err)
		}
	}
}

func TestToUUIDv8(t *testing.T) {
	f, err := newFleet(fleetConfig{machines: 12, burst: 4, roundsPerMs: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []snowfence.ID
	for range 100_000 {
		id, err := f.nextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Large random IDs too, whose bit 62 is set.
	for range 1000 {
		ids = append(ids, snowfence.ID(rand.Int64()))
	}
	type pair struct {
		id snowfence.ID
		u  [16]byte
	}
	var ps []pair
	for _, id := range ids {
		u, err := toUUIDv8(id)
		if err != nil {
			t.Fatal(err)
		}
		g := uuid.UUID(u)
		if g.Version() != 8 || g.Variant() != uuid.RFC4122 {
			t.Fatalf("toUUIDv8(%d) = %s: version %d, variant %s", id, g, g.Version(), g.Variant())
		}
		d, _ := snowfence.Decode(id)
		if ms := int64(u[0])<<40 | int64(u[1])<<32 | int64(u[2])<<24 | int64(u[3])<<16 | int64(u[4])<<8 | int64(u[5]); ms != d.CreatedAt.UnixMilli() {
			t.Fatalf("toUUIDv8(%d): first 48 bits %d, want %d", id, ms, d.CreatedAt.UnixMilli())
		}
		ps = append(ps, pair{id, u})
	}
	byID := slices.Clone(ps)
	slices.SortFunc(byID, func(a, b pair) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	byUUID := slices.Clone(ps)
	slices.SortFunc(byUUID, func(a, b pair) int { return bytes.Compare(a.u[:], b.u[:]) })
	for i := range byID {
		if byID[i].id != byUUID[i].id {
			t.Fatalf("position %d: ID order has %d, UUID order %d", i, byID[i].id, byUUID[i].id)
		}
	}
}

func TestFleetInterleaves(t *testing.T) {
	f, err := newFleet(fleetConfig{machines: 12, burst: 4, roundsPerMs: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := map[snowfence.ID]bool{}
	descents := 0
	var prev snowfence.ID
	for i := range 12 * 4 * 4 * 10 { // ten milliseconds
		id, err := f.nextID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("ID %d repeats", id)
		}
		seen[id] = true
		if i > 0 && id < prev {
			descents++
		}
		prev = id
	}
	// Each millisecond, machine 0's second to fourth bursts come after
	// machine 11's: three descents per millisecond.
	if descents != 30 {
		t.Errorf("%d descents in insert order over 10 ms, want 30", descents)
	}
}
