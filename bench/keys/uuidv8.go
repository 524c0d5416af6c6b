package main

import (
	"context"

	"github.com/snowfence/snowfence"
)

// schedule is the fleet's: v1, as the fleet mints.
var schedule = snowfence.DefaultSchedule()

// toUUIDv8 returns the UUIDv8 form of a snowfence ID (Schedule.ToUUID):
// the first 48 bits are the ID's Unix milliseconds, then the version, the
// ID and its check bits around the variant. In a uuid column such values
// sort as the IDs do.
func toUUIDv8(id snowfence.ID) ([16]byte, error) {
	return schedule.ToUUID(id)
}

const uuidV8Maker = "snowfence.Schedule.ToUUID"

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
