package publicid

import "errors"

// Errors. Match them with errors.Is; the messages around them name the
// offending text (which is public) and never key material.
var (
	// ErrInvalid is wrapped by the refusal of text that is not the
	// canonical form of a public ID of the kind asked for: a bad type
	// prefix or separator, the wrong length, a character outside the
	// lower-case alphabet, or a first suffix character above 7. Nothing
	// was decrypted.
	ErrInvalid = errors.New("publicid: invalid public ID")
	// ErrInvalidPrefix is wrapped by the refusal to make a public ID with
	// a type prefix that is not a TypeID prefix (see NewRandom), or that
	// is empty (Keyset.Seal).
	ErrInvalidPrefix = errors.New("publicid: invalid type prefix")
	// ErrNegativeID is returned by Keyset.Seal for an ID below zero, which
	// no generator issues.
	ErrNegativeID = errors.New("publicid: negative ID")
	// ErrForged is returned by Keyset.Open for a well-formed sealed ID that
	// does not decrypt, under the key its version names, to an ID of its
	// type: it was forged, altered, or made with another keyset.
	ErrForged = errors.New("publicid: forged or altered sealed ID")
	// ErrUnknownKey is returned by Keyset.Open for a sealed ID whose key
	// version the keyset does not list.
	ErrUnknownKey = errors.New("publicid: unknown key version")
	// ErrRetiredKey is returned by Keyset.Open for a sealed ID whose key
	// version the keyset lists as retired: it may have been genuine, but
	// the keyset no longer opens IDs sealed under that key.
	ErrRetiredKey = errors.New("publicid: retired key version")
	// ErrInvalidKeyset is wrapped by every error of ParseKeyset: the
	// keyset file is not the documented format.
	ErrInvalidKeyset = errors.New("publicid: invalid keyset")
	// ErrKeysetFileMode is wrapped by CheckKeysetFileMode's warning about
	// a keyset file that users other than its owner may read.
	ErrKeysetFileMode = errors.New("publicid: keyset file readable by others")
)
