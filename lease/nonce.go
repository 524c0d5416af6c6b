package lease

import (
	"crypto/rand"
	"encoding/hex"
)

// NewNonce returns 128 random bits in hex. A table store writes a fresh one
// with every claim attempt and, when it must decide whether an attempt of
// unknown outcome committed, adopts only a record that carries its own
// nonce: a holder name can be shared by two keepers or two processes, and
// an epoch read back may be another claimer's. Extensions draw their
// renewal values from it too (Renewals, which says why crypto/rand).
func NewNonce() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
