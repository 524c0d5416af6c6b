package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
)

// crockford is Crockford's base32 alphabet in lower case, as TypeID writes
// it.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// newPublicID returns a random public ID in TypeID's text form: "order_"
// and 128 bits from crypto/rand as 26 base32 characters (two zero bits
// pad the 128 to 130).
//
// stand-in until package publicid's random public ID lands: swap this body
// for its generator with the prefix "order", and publicIDMaker below with
// it.
func newPublicID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "order_" + base32Suffix(b), nil
}

const publicIDMaker = "a local function, a stand-in for package publicid's"

// base32Suffix is TypeID's suffix of 16 bytes.
func base32Suffix(b [16]byte) string {
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 0, 26)
	for i := 25; i >= 0; i-- {
		// Character i from the right holds bits 5i to 5i+4.
		shift := uint(5 * i)
		var c uint64
		switch {
		case shift >= 64:
			c = hi >> (shift - 64)
		case shift > 59:
			c = lo>>shift | hi<<(64-shift)
		default:
			c = lo >> shift
		}
		out = append(out, crockford[c&31])
	}
	return string(out)
}

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
