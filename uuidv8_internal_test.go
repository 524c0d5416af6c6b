package snowfence

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// crc11Bytes is CRC-11/FLEXRAY written out over bytes, as the CRC
// catalogue defines it (width 11, polynomial 0x385, initial 0x01a, no
// reflection, no final XOR).
func crc11Bytes(b []byte) uint16 {
	crc := uint16(0x01a)
	for _, c := range b {
		crc ^= uint16(c) << 3
		for range 8 {
			if crc&0x400 != 0 {
				crc = (crc<<1 ^ 0x385) & 0x7ff
			} else {
				crc = crc << 1 & 0x7ff
			}
		}
	}
	return crc
}

func TestCRC11(t *testing.T) {
	if got := crc11Bytes([]byte("123456789")); got != 0x5a3 {
		t.Fatalf("CRC-11/FLEXRAY of 123456789 = %#x, the catalogue's check is 0x5a3", got)
	}
	r := rand.New(rand.NewPCG(11, 11))
	for range 10_000 {
		v := r.Uint64() >> 1
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v)
		if got, want := crc11(v), crc11Bytes(b[:]); got != want {
			t.Fatalf("crc11(%#x) = %#x, byte-wise %#x", v, got, want)
		}
	}
}
