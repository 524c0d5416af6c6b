package main

import (
	"context"

	"github.com/google/uuid"
)

// newUUIDv7Generator returns the UUIDv7 generator of one load: a function
// that returns the next UUIDv7, on the system clock.
//
// stand-in until the project's own UUIDv7 generator lands in the root
// package: swap this body for one that makes that generator (once, here)
// and returns its next-UUID method.
// uuidV7Maker (next to it, so both change together) names it in the
// report.
func newUUIDv7Generator() (func() ([16]byte, error), error) {
	return func() ([16]byte, error) { return uuid.NewV7() }, nil
}

const uuidV7Maker = "github.com/google/uuid's NewV7, a stand-in for the project's own"

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
