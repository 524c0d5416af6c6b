package main

import (
	"context"

	"github.com/snowfence/snowfence/publicid"
)

// newPublicID returns a random public ID in TypeID's text form: "order_"
// and 128 bits from crypto/rand as 26 base32 characters
// (publicid.NewRandom).
func newPublicID() (string, error) {
	r, err := publicid.NewRandom("order")
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

const publicIDMaker = "publicid.NewRandom"

type publicIDSource struct{}

func (publicIDSource) next(context.Context, int64) (any, any, error) {
	s, err := newPublicID()
	return s, s, err
}

func publicIDKind() kind {
	return kind{
		name:  "public_id",
		label: "public ID (text UNIQUE) + bigserial PK",
		// A table keyed for the outside world by a random ID still has
		// an internal key for its foreign keys and joins: a bigserial
		// primary key. Both indexes are measured; lookups go by the
		// public ID. COLLATE "C" keeps the comparison a byte compare
		// (TypeID text is ASCII) whatever the database's locale.
		keyDDL:    `id bigserial PRIMARY KEY, public_id text COLLATE "C" NOT NULL UNIQUE`,
		keyCol:    "public_id",
		copyKey:   true,
		how:       `"order_" + 26 lower-case Crockford base32 characters of 16 crypto/rand bytes (TypeID text form), in a text COLLATE "C" UNIQUE column beside a bigserial primary key (` + publicIDMaker + ")",
		newSource: func() (source, error) { return publicIDSource{}, nil },
	}
}
