package main

import (
	"context"

	"github.com/google/uuid"
)

// newUUIDv7 returns a UUIDv7 from the system clock.
//
// stand-in until the project's own UUIDv7 generator lands in the root
// package: swap this body for it (one generator for the whole load).
func newUUIDv7() ([16]byte, error) { return uuid.NewV7() }

type uuidV7Source struct{}

func (uuidV7Source) next(context.Context, int64) (any, any, error) {
	u, err := newUUIDv7()
	if err != nil {
		return nil, nil, err
	}
	return pgUUID(u), pgUUID(u), nil
}

func uuidV7Kind() kind {
	return kind{
		name:      "uuidv7",
		label:     "UUIDv7",
		keyDDL:    "id uuid PRIMARY KEY",
		keyCol:    "id",
		copyKey:   true,
		how:       "one UUIDv7 generator on the system clock, as the loader mints (github.com/google/uuid's NewV7 until the project's own)",
		newSource: func() (source, error) { return uuidV7Source{}, nil },
	}
}
