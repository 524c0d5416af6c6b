package main

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgUUID is u as pgx binds it to a uuid column.
func pgUUID(u [16]byte) pgtype.UUID { return pgtype.UUID{Bytes: u, Valid: true} }

type uuidV4Source struct{}

func (uuidV4Source) next(context.Context, int64) (any, any, error) {
	u, err := uuid.NewRandom() // 122 bits from crypto/rand
	if err != nil {
		return nil, nil, err
	}
	return pgUUID(u), pgUUID(u), nil
}

func uuidV4Kind() kind {
	return kind{
		name:      "uuidv4",
		label:     "UUIDv4",
		keyDDL:    "id uuid PRIMARY KEY",
		keyCol:    "id",
		copyKey:   true,
		how:       "github.com/google/uuid's NewRandom (crypto/rand)",
		newSource: func() (source, error) { return uuidV4Source{}, nil },
	}
}
