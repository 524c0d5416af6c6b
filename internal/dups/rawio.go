package dups

import "unsafe"

// bytesOf views ids as bytes, in the machine's byte order. The temporary
// files hold IDs this way: they are read back by the same process, so no
// encoding is needed, and none is paid for on 100 million IDs.
func bytesOf(ids []uint64) []byte {
	if len(ids) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&ids[0])), len(ids)*8)
}
