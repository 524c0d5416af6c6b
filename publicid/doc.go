// Package publicid makes public IDs: names for rows that can appear in
// URLs and pages without telling the outside world what a snowfence ID
// tells — when it was made, on which machine, and, from two of them, how
// many were made in between. There are two kinds, for the two cases a
// team has.
//
// # Random public IDs
//
// A Random is a type prefix and 128 bits from crypto/rand, in the TypeID
// text form:
//
//	order_01h455vb4pex5vsknk084sn02q
//
// The prefix follows the TypeID rules (at most 63 characters of a–z and
// '_', starting and ending with a letter); the suffix is 26 characters of
// lower-case Crockford base32 (0–9 and a–z but i, l, o, u) of the 128 bits
// with two zero bits in front, so its first character is 0–7. The caller
// stores it in a unique column beside the internal ID and looks rows up by
// it. Nothing in it derives from time, volume or machine: NewRandom reads
// 16 fresh bytes from crypto/rand for each ID and keeps no state, so no ID
// says anything about another. The bits are not a UUIDv7, which a TypeID
// generator would write: a UUIDv7 carries its creation time, the thing a
// public ID must not show. ParseRandom takes every TypeID all the same,
// and Bits returns the 16 bytes a TypeID's UUID holds.
//
// Collisions: at 30 million IDs a day for ten years, n ≈ 1.1·10^11 IDs.
// The chance that any two of them are equal is at most n²/2^129 (the
// birthday bound for 128-bit values), about 1.8·10^-17. The unique column
// turns even that into a failed insert to retry, never a shared ID.
//
// # Sealed public IDs
//
// A sealed ID is the internal ID itself, encrypted, for tables that cannot
// take another column: the server opens it back into the ID, so nothing is
// stored. One AES-128 block of 16 bytes holds
//
//	bytes 0–7    the ID, big-endian (bit 63 is zero: IDs are non-negative)
//	bytes 8–15   the type tag: the first 8 bytes of SHA-256 of a fixed
//	             domain string and the type prefix
//
// and is encrypted under the keyset's primary key (Keyset.Seal). The text
// is the type prefix, '_', the key's version character, and the 26
// characters of the encrypted block in the same base32 as the random form:
//
//	order_25peqp0shbffmh4asf3fn5nb6zt
//	└─┬─┘ │└───────────┬────────────┘
//	prefix│  26 characters: the encrypted block (its first 0–7)
//	      key version
//
// 27 characters after the '_' where a random
// ID has 26: neither parser takes the other kind. Keyset.Open parses the
// text strictly, decrypts the block under the key its version names and
// checks bit 63 and the tag of the prefix the text carries. Those 65 bits
// are the redundancy that rejects forgeries without a lookup: a text an
// attacker makes up, or a genuine one with any character changed,
// decrypts to 128 bits a forger cannot predict, which pass with
// probability 2^-65 (about 2.7·10^-20) per text tried. A million tries a
// second for a year would succeed with probability below 10^-6. The tag
// also binds the type: an order's sealed ID does not open as a user's (the
// two prefixes' tags would have to agree in all 64 bits).
//
// The same ID, type and key always seal to the same text, so a sealed ID
// is a stable public name; equal texts show equal IDs, and nothing else
// about the ID shows. The version character picks the key to open with,
// so keys rotate without breaking links (see Keyset and docs/public-ids.md):
// a keyset has one primary key that seals, decrypt-only keys that still
// open, and retired keys whose IDs are refused (ErrRetiredKey).
//
// Why not other schemes. Hashids and Sqids are encodings, not encryption:
// their "salt" only shuffles an alphabet, which a handful of IDs of known
// or consecutive numbers gives back, and with it every number. FF3-1, the
// format-preserving cipher, has been withdrawn by NIST after attacks on its
// tweak. A single AES block is the plainest pseudorandom permutation of 128
// bits there is, and the text need not look like a number. An AEAD such as
// AES-GCM would add a nonce and a 16-byte tag, nearly doubling the text,
// for no gain here: the plaintexts never repeat (the ID is unique) and the
// tag bits of the block already authenticate it.
//
// # Key material
//
// A Keyset's String, GoString, Format, LogValue and MarshalJSON show key
// versions and statuses only, and no error of this package quotes a key,
// so key material reaches no log line, error message or fmt output.
//
// # Concurrency
//
// NewRandom, ParseRandom and a Keyset's methods are safe for concurrent
// use; a Keyset is immutable once parsed.
package publicid
