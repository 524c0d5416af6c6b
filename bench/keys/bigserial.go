package main

import "context"

// serialSource leaves the key to the database: a fresh bigserial column
// numbers the rows 1, 2, 3, … in insert order.
type serialSource struct{}

func (serialSource) next(_ context.Context, row int64) (any, any, error) {
	return nil, row + 1, nil
}

func bigserialKind() kind {
	return kind{
		name:      "bigserial",
		label:     "bigserial",
		keyDDL:    "id bigserial PRIMARY KEY",
		keyCol:    "id",
		how:       "the column's sequence (nextval) numbers the rows as COPY inserts them",
		newSource: func() (source, error) { return serialSource{}, nil },
	}
}
