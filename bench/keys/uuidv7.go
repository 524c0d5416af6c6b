package main

import (
	"context"

	"github.com/snowfence/snowfence"
)

// newUUIDv7Generator returns the UUIDv7 generator of one load: a function
// that returns the next UUIDv7 of one snowfence.UUIDGenerator on the
// system clock. uuidV7Maker (next to it, so both change together) names it
// in the report.
func newUUIDv7Generator() (func() ([16]byte, error), error) {
	g := snowfence.NewUUIDGenerator(nil)
	return func() ([16]byte, error) { return g.Next(), nil }, nil
}

const uuidV7Maker = "snowfence.UUIDGenerator"

type uuidV7Source struct{ next7 func() ([16]byte, error) }

func (s uuidV7Source) next(context.Context, int64) (any, any, error) {
	u, err := s.next7()
	if err != nil {
		return nil, nil, err
	}
	return pgUUID(u), pgUUID(u), nil
}

func uuidV7Kind() kind {
	return kind{
		name:    "uuidv7",
		label:   "UUIDv7",
		keyDDL:  "id uuid PRIMARY KEY",
		keyCol:  "id",
		copyKey: true,
		how:     "one UUIDv7 generator on the system clock, as the loader mints (" + uuidV7Maker + ")",
		newSource: func() (source, error) {
			g, err := newUUIDv7Generator()
			if err != nil {
				return nil, err
			}
			return uuidV7Source{g}, nil
		},
	}
}
