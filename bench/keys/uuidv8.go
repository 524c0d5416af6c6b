package main

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/snowfence/snowfence"
)

// toUUIDv8 returns the UUIDv8 form of a snowfence ID: the first 48 bits are
// the ID's Unix milliseconds (from the v1 layout's decode), then the version
// nibble 8, 12 bits, the variant bits 10, and 62 bits; the 74 bits after
// the version and variant hold the 63-bit ID right-aligned (the top 11 are
// zero). In a uuid column such values sort as the IDs do.
//
// stand-in until the root package's Schedule.ToUUID lands: swap this body
// for snowfence.DefaultSchedule().ToUUID(id), and uuidV8Maker below with
// it.
func toUUIDv8(id snowfence.ID) ([16]byte, error) {
	if id < 0 {
		return [16]byte{}, fmt.Errorf("uuidv8: negative ID %d", id)
	}
	ms := uint64(snowfence.V1().TimeOf(id).UnixMilli()) // the fleet mints v1
	if ms >= 1<<48 {
		return [16]byte{}, fmt.Errorf("uuidv8: %d ms does not fit 48 bits", ms)
	}
	// The 74 bits are 11 zero bits and the ID: rand_a holds the zeros and
	// the ID's bit 62, the 62 bits after the variant its bits 61 to 0.
	v := uint64(id)
	var u [16]byte
	binary.BigEndian.PutUint64(u[0:8], ms<<16|0x8<<12|v>>62)
	binary.BigEndian.PutUint64(u[8:16], 0b10<<62|v&(1<<62-1))
	return u, nil
}

const uuidV8Maker = "a local function of the same layout, a stand-in for the root package's"

type uuidV8Source struct{ f *fleet }

func (s uuidV8Source) next(ctx context.Context, _ int64) (any, any, error) {
	id, err := s.f.nextID(ctx)
	if err != nil {
		return nil, nil, err
	}
	u, err := toUUIDv8(id)
	if err != nil {
		return nil, nil, err
	}
	return pgUUID(u), pgUUID(u), nil
}

func uuidV8Kind(cfg fleetConfig) kind {
	return kind{
		name:    "uuidv8",
		label:   "snowfence UUIDv8",
		keyDDL:  "id uuid PRIMARY KEY",
		keyCol:  "id",
		copyKey: true,
		how:     "the UUIDv8 form (first 48 bits the ID's Unix ms, then version 8, variant, the ID) of the same interleaved fleet's IDs as the snowfence BIGINT table (" + uuidV8Maker + ")",
		newSource: func() (source, error) {
			f, err := newFleet(cfg)
			if err != nil {
				return nil, err
			}
			return uuidV8Source{f}, nil
		},
	}
}
