package publicid

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Status is a key's part in a keyset.
type Status string

// The statuses of a key.
const (
	// StatusPrimary: the one key that seals; it opens too.
	StatusPrimary Status = "primary"
	// StatusDecryptOnly: the key opens IDs sealed under it but seals
	// nothing. A new key starts so on every server before it becomes
	// primary, and an old one stays so while IDs sealed under it are in
	// use.
	StatusDecryptOnly Status = "decrypt-only"
	// StatusRetired: IDs sealed under the key are refused (ErrRetiredKey).
	// The file need not hold a retired key's material.
	StatusRetired Status = "retired"
)

// KeyVersion describes one key of a keyset, without its material.
type KeyVersion struct {
	// Version is the key's version character, the first character of the
	// suffix of every ID sealed under it.
	Version string
	// Status is its part in the keyset.
	Status Status
}

// Keyset is a parsed keyset file: AES-128 keys by version character, one
// of them primary. It seals with the primary key and opens with the
// primary and decrypt-only keys. It is immutable and safe for concurrent
// use. Its String, GoString, Format, LogValue and MarshalJSON show versions
// and statuses only: no key material reaches a log line, an error message
// or fmt output.
type Keyset struct {
	// keys is indexed by the version character's value in the alphabet.
	keys    [len(alphabet)]keyEntry
	primary byte // index into keys
	// blocks holds *[16]byte scratch blocks for Open.
	blocks sync.Pool
}

// keyEntry is one version of a keyset.
type keyEntry struct {
	status Status // "" when the version is not listed
	block  cipher.Block
}

// ParseKeyset parses a keyset file, one JSON object with the single member
// "keys", which maps each key version to its key:
//
//	{
//	  "keys": {
//	    "2": {"status": "primary",      "key": "3f1c9a0e6b2d48e7a5c4f0b19d8e7a62"},
//	    "1": {"status": "decrypt-only", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"},
//	    "0": {"status": "retired"}
//	  }
//	}
//
// A version is one character of the lower-case Crockford alphabet
// (0123456789abcdefghjkmnpqrstvwxyz), so a keyset has at most 32 versions
// over its life. "status" is "primary", "decrypt-only" or "retired";
// exactly one key is primary. "key" is the AES-128 key, 32 hexadecimal
// digits in lower case (openssl rand -hex 16); a primary or decrypt-only
// key requires it, a retired one may omit it. Parsing is strict: member
// names are case-sensitive, unknown or repeated members (a version listed
// twice too) and trailing data are errors, and no two versions may hold
// the same key. Every error wraps ErrInvalidKeyset and names the version,
// never the key.
func ParseKeyset(b []byte) (*Keyset, error) {
	ks, err := parseKeyset(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidKeyset, err)
	}
	return ks, nil
}

// ReadKeyset reads and parses the keyset file at path. See also
// CheckKeysetFileMode.
func ReadKeyset(path string) (*Keyset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("publicid: reading the keyset: %w", err)
	}
	ks, err := ParseKeyset(b)
	clear(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

// CheckKeysetFileMode returns an error wrapping ErrKeysetFileMode when the
// file at path may be read or written by users other than its owner (any
// of the permission bits 077), for a warning: the keys are secrets. It
// returns nil for a private file, and the error of os.Stat if there is
// one.
func CheckKeysetFileMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %04o; make it readable by its owner only (chmod 600)", ErrKeysetFileMode, path, m)
	}
	return nil
}

func parseKeyset(b []byte) (*Keyset, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	ks := &Keyset{}
	ks.blocks.New = func() any { return new([16]byte) }
	var sawKeys bool
	primaries := 0
	seen := map[[16]byte]string{}
	err := jsonObject(dec, func(name string) error {
		if name != "keys" {
			return fmt.Errorf(`an unknown member (a name of %d bytes, not quoted: it could be a key pasted in the wrong place); the only member is "keys"`, len(name))
		}
		if sawKeys {
			return errors.New(`"keys" appears twice`)
		}
		sawKeys = true
		return jsonObject(dec, func(version string) error {
			if len(version) != 1 || decodeTable[version[0]] == invalidDigit {
				return fmt.Errorf("a key version of %d bytes (not quoted: it could be a key pasted in the wrong place); a version is one character of %s", len(version), alphabet)
			}
			e := &ks.keys[decodeTable[version[0]]]
			if e.status != "" {
				return fmt.Errorf("key version %q is listed twice", version)
			}
			status, raw, err := keyMembers(dec)
			if err != nil {
				return fmt.Errorf("key version %q: %w", version, err)
			}
			e.status = status
			if status == StatusPrimary {
				primaries++
				ks.primary = decodeTable[version[0]]
			}
			if raw == nil {
				return nil
			}
			var k [16]byte
			copy(k[:], raw)
			clear(raw)
			if other, dup := seen[k]; dup {
				return fmt.Errorf("key versions %q and %q hold the same key", other, version)
			}
			seen[k] = version
			block, err := aes.NewCipher(k[:])
			clear(k[:])
			if err != nil {
				return fmt.Errorf("key version %q: %w", version, err)
			}
			if status != StatusRetired {
				e.block = block
			}
			return nil
		})
	})
	clear(seen)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("trailing data after the object")
		}
	}
	switch {
	case err != nil:
	case !sawKeys:
		err = errors.New(`"keys" is required`)
	case primaries != 1:
		err = fmt.Errorf("%d keys are primary; exactly one must be", primaries)
	}
	if err != nil {
		return nil, err
	}
	return ks, nil
}

// keyMembers reads one version's {"status": S, "key": K}; key is nil when
// absent (allowed for a retired key only).
func keyMembers(dec *json.Decoder) (Status, []byte, error) {
	var status Status
	var key []byte
	var sawStatus, sawKey bool
	err := jsonObject(dec, func(name string) error {
		t, err := token(dec)
		if err != nil {
			return err
		}
		s, ok := t.(string)
		switch {
		case name != "status" && name != "key":
			return fmt.Errorf(`an unknown member (a name of %d bytes, not quoted: it could be a key pasted in the wrong place); a key has "status" and "key"`, len(name))
		case !ok:
			return fmt.Errorf("%q must be a string", name)
		case name == "status":
			if sawStatus {
				return errors.New(`"status" appears twice`)
			}
			sawStatus = true
			switch Status(s) {
			case StatusPrimary, StatusDecryptOnly, StatusRetired:
				status = Status(s)
			default:
				return fmt.Errorf(`"status" is a string of %d bytes (not quoted: it could be a key pasted in the wrong place); want "primary", "decrypt-only" or "retired"`, len(s))
			}
		default:
			if sawKey {
				return errors.New(`"key" appears twice`)
			}
			sawKey = true
			// Refusals never quote the text: it may be most of a key.
			if len(s) != 32 || strings.ToLower(s) != s {
				return fmt.Errorf(`"key" must be 32 lower-case hexadecimal digits (16 bytes; openssl rand -hex 16), not %d characters`, len(s))
			}
			k, err := hex.DecodeString(s)
			if err != nil {
				return errors.New(`"key" must be 32 lower-case hexadecimal digits (16 bytes; openssl rand -hex 16)`)
			}
			key = k
		}
		return nil
	})
	switch {
	case err != nil:
		return "", nil, err
	case !sawStatus:
		return "", nil, errors.New(`"status" is required`)
	case key == nil && status != StatusRetired:
		return "", nil, fmt.Errorf(`a %s key needs its "key"`, status)
	}
	return status, key, nil
}

// jsonObject reads a JSON object from dec, calling member for each name
// with dec positioned at its value; member must consume the value.
func jsonObject(dec *json.Decoder, member func(name string) error) error {
	if err := jsonDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := token(dec)
		if err != nil {
			return err
		}
		name, ok := t.(string)
		if !ok {
			return fmt.Errorf("want a member name, got %s", describeToken(t))
		}
		if err := member(name); err != nil {
			return err
		}
	}
	return jsonDelim(dec, '}')
}

func jsonDelim(dec *json.Decoder, want json.Delim) error {
	t, err := token(dec)
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want '%c', got %v", want, describeToken(t))
	}
	return nil
}

// token reads the next JSON token. Its errors say where, never what: the
// decoder's own messages quote the offending character, which may be a
// character of a key.
func token(dec *json.Decoder) (json.Token, error) {
	t, err := dec.Token()
	switch {
	case err == io.EOF:
		return nil, errors.New("unexpected end of file")
	case err != nil:
		return nil, fmt.Errorf("malformed JSON near byte %d", dec.InputOffset())
	}
	return t, nil
}

// describeToken names the kind of a JSON token for a message, never its
// text, which might be key material in the wrong place.
func describeToken(t json.Token) string {
	switch v := t.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case json.Delim:
		return "'" + v.String() + "'"
	}
	return "a value"
}

// Primary returns the version character of the primary key.
func (ks *Keyset) Primary() string { return alphabet[ks.primary : ks.primary+1] }

// Versions lists the keyset's versions in alphabet order, without key
// material.
func (ks *Keyset) Versions() []KeyVersion {
	var vs []KeyVersion
	for i, e := range ks.keys {
		if e.status != "" {
			vs = append(vs, KeyVersion{Version: alphabet[i : i+1], Status: e.status})
		}
	}
	return vs
}
