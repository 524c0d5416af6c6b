package publicid

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/snowfence/snowfence"
)

// sealedLen is the length of a sealed ID's suffix: the key-version
// character and 26 characters of the 128-bit block. It differs from the
// random form's 26, so neither parser takes the other's IDs.
const sealedLen = 1 + suffixLen

// tagDomain starts the hashed text of a type tag, so that no other use of
// SHA-256 over a prefix yields the same bytes.
const tagDomain = "snowfence publicid sealed type tag\x00"

// Opened is what Keyset.Open reads from a sealed ID.
type Opened struct {
	// Prefix is the ID's type prefix, such as "order".
	Prefix string
	// ID is the internal ID sealed in it.
	ID snowfence.ID
	// KeyVersion is the version character of the key it was sealed
	// under.
	KeyVersion string
}

// Seal returns the sealed public ID of id with type prefix: prefix, '_',
// the primary key's version character and 26 characters of lower-case
// Crockford base32 of one AES-128 block (see the package documentation).
// The same id, prefix and key always give the same text. prefix follows
// the TypeID rules and must not be empty (ErrInvalidPrefix); a negative id
// is ErrNegativeID.
func (ks *Keyset) Seal(prefix string, id snowfence.ID) (string, error) {
	b, err := ks.AppendSeal(make([]byte, 0, len(prefix)+1+sealedLen), prefix, id)
	if err != nil {
		return "", err
	}
	// b is never written again: the string shares it, as strings.Builder
	// does, so Seal allocates once.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// AppendSeal appends the sealed public ID of id to dst, as Seal returns
// it; on error it returns dst unchanged.
func (ks *Keyset) AppendSeal(dst []byte, prefix string, id snowfence.ID) ([]byte, error) {
	if prefix == "" {
		return dst, fmt.Errorf("%w: a sealed ID needs a type prefix", ErrInvalidPrefix)
	}
	if why := checkPrefix(prefix); why != "" {
		return dst, fmt.Errorf("%w: %q: %s", ErrInvalidPrefix, prefix, why)
	}
	if id < 0 {
		return dst, fmt.Errorf("%w: %d", ErrNegativeID, int64(id))
	}
	// The block is encrypted in dst's spare room, then written over by
	// its text: memory passed to the cipher (an interface) escapes, and
	// dst's is the caller's already.
	n := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	tag := typeTag(prefix)
	dst = append(dst, tag[:]...)
	ks.keys[ks.primary].block.Encrypt(dst[n:], dst[n:])
	block := [16]byte(dst[n:])
	dst = append(append(dst[:n], prefix...), '_', alphabet[ks.primary])
	return appendBase32(dst, &block), nil
}

// Open reads a sealed public ID. The text must be canonical: a non-empty
// TypeID type prefix, '_', a version character and 26 characters of the
// lower-case alphabet (0–9, a–z but i, l, o, u; the first of the 26 is 0–7);
// anything else wraps ErrInvalid and decrypts nothing. A version the
// keyset does not list is ErrUnknownKey, a retired one ErrRetiredKey. A
// block that does not decrypt under its key to a non-negative ID and the
// type tag of the prefix is ErrForged: changing any character of a sealed
// ID makes it so (or invalid), never another ID, except with probability
// 2^-65 per text tried. Open allocates nothing when it succeeds.
func (ks *Keyset) Open(s string) (Opened, error) {
	prefix, suffix, sep := split(s)
	switch {
	case !sep || prefix == "":
		return Opened{}, invalid(s, "a sealed ID is a type prefix, '_' and 27 characters")
	case len(suffix) != sealedLen:
		return Opened{}, invalid(s, suffixProblem(suffix, sealedLen))
	}
	if why := checkPrefix(prefix); why != "" {
		return Opened{}, invalid(s, why)
	}
	v := decodeTable[suffix[0]]
	// A pooled block: memory passed to the cipher (an interface) escapes.
	bp := ks.blocks.Get().(*[16]byte)
	defer ks.blocks.Put(bp)
	block := bp[:]
	if v == invalidDigit || !decodeBase32(suffix[1:], bp) {
		return Opened{}, invalid(s, suffixProblem(suffix, sealedLen))
	}
	e := &ks.keys[v]
	switch e.status {
	case "":
		return Opened{}, fmt.Errorf("%w: %q: version %q is not in the keyset", ErrUnknownKey, s, suffix[:1])
	case StatusRetired:
		return Opened{}, fmt.Errorf("%w: %q: version %q is retired", ErrRetiredKey, s, suffix[:1])
	}
	e.block.Decrypt(block, block)
	tag := typeTag(prefix)
	if block[0]&0x80 != 0 || subtle.ConstantTimeCompare(block[8:], tag[:]) != 1 {
		return Opened{}, fmt.Errorf("%w: %q", ErrForged, s)
	}
	return Opened{Prefix: prefix, ID: snowfence.ID(binary.BigEndian.Uint64(block[:8])), KeyVersion: suffix[:1]}, nil
}

// typeTag is the block's type tag for prefix: the first 8 bytes of
// SHA-256 of tagDomain and the prefix.
func typeTag(prefix string) (tag [8]byte) {
	var buf [len(tagDomain) + MaxPrefixLen]byte
	n := copy(buf[:], tagDomain)
	n += copy(buf[n:], prefix)
	sum := sha256.Sum256(buf[:n])
	copy(tag[:], sum[:8])
	return tag
}
