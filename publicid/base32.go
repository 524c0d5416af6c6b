package publicid

// The text form of 128 bits: 26 characters of lower-case Crockford base32,
// most significant first, of the bits with two zero bits in front (130
// bits), as the TypeID specification writes a UUID. The first character
// carries the two zero bits and three data bits, so it is one of 0–7.

// alphabet is Crockford's base32 alphabet in lower case: the digits and the
// letters but i, l, o and u.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// suffixLen is the length of the text of 128 bits.
const suffixLen = 26

// invalidDigit marks a byte outside the alphabet in decodeTable.
const invalidDigit = 0xff

// decodeTable maps each byte to its value in the alphabet, invalidDigit for
// any other byte: upper case, i, l, o, u and every non-letter are refused,
// never read as the digit they resemble, so every 128-bit value has
// exactly one text.
var decodeTable = func() (t [256]byte) {
	for i := range t {
		t[i] = invalidDigit
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// appendBase32 appends the 26-character text of b.
func appendBase32(dst []byte, b *[16]byte) []byte {
	hi := uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
	lo := uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 |
		uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15])
	var out [suffixLen]byte
	for i := suffixLen - 1; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return append(dst, out[:]...)
}

// decodeBase32 decodes the 26-character text s into b. It reports false,
// leaving b unspecified, unless s is the canonical text of some 128 bits:
// exactly 26 characters of the lower-case alphabet, the first 0–7.
func decodeBase32(s string, b *[16]byte) bool {
	if len(s) != suffixLen || decodeTable[s[0]] > 7 {
		return false
	}
	var hi, lo uint64
	for i := 0; i < suffixLen; i++ {
		v := decodeTable[s[i]]
		if v == invalidDigit {
			return false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	return true
}
