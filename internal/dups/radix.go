package dups

import "slices"

// radixMin is the length below which sortIDs leaves the work to
// slices.Sort: the histograms would cost more than they save.
const radixMin = 1 << 10

// sortIDs sorts ids in ascending order, using scratch (at least as long as
// ids) as the other buffer of an LSD radix sort on bytes. Passes on a byte
// every ID shares (the top bytes of IDs minted within days of each other)
// are skipped. The result is in ids.
func sortIDs(ids, scratch []uint64) {
	if len(ids) < radixMin {
		slices.Sort(ids)
		return
	}
	var counts [8][256]int
	for _, v := range ids {
		for b := range 8 {
			counts[b][byte(v>>(8*b))]++
		}
	}
	src, dst := ids, scratch[:len(ids)]
	for b := range 8 {
		c := &counts[b]
		if c[byte(src[0]>>(8*b))] == len(src) {
			continue // every ID has this byte
		}
		var offs [256]int
		sum := 0
		for i, n := range c {
			offs[i] = sum
			sum += n
		}
		shift := uint(8 * b)
		for _, v := range src {
			d := byte(v >> shift)
			dst[offs[d]] = v
			offs[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ids[0] {
		copy(ids, src)
	}
}
