package main

import "context"

// A source makes the keys of one table's rows, in insert order. It is used
// by one goroutine.
type source interface {
	// next returns the value of row's key column for COPY (nil when the
	// database assigns the key, as bigserial does) and the value a point
	// lookup of that row binds.
	next(ctx context.Context, row int64) (value, lookup any, err error)
}

// A kind is one key type: its table, how its rows are keyed and looked up.
type kind struct {
	// name is short and SQL-safe; the table is "keys_" + name.
	name string
	// label names the key type in the table and the plot.
	label string
	// keyDDL is the key column(s) of CREATE TABLE, before the payload.
	keyDDL string
	// keyCol is the column a lookup finds a row by, and whose index is
	// the key index.
	keyCol string
	// copyKey is true when COPY sends the key column; false when the
	// database assigns it (bigserial).
	copyKey bool
	// how says in one sentence how the keys are made, for the docs.
	how string
	// newSource returns the key source of a fresh load.
	newSource func() (source, error)
}

func (k kind) table() string { return "keys_" + k.name }

// kinds returns the key types in the order they are measured; the first
// (snowfence BIGINT) is the one every ratio is taken against.
func kinds(fleet fleetConfig) []kind {
	return []kind{
		snowfenceKind(fleet),
		bigserialKind(),
		uuidV4Kind(),
		uuidV7Kind(),
		uuidV8Kind(fleet),
		publicIDKind(),
	}
}
