package oracle

import "slices"

// Duplicates checks ids for uniqueness in memory, independently of the
// table: it sorts ids in place and returns the exact number of extra copies
// (len(ids) minus the number of distinct IDs; an ID present three times
// counts 2) and up to max of the duplicated IDs, smallest first, each once.
func Duplicates(ids []int64, max int) (n int64, examples []int64) {
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1] {
			continue
		}
		n++
		if len(examples) < max && (len(examples) == 0 || examples[len(examples)-1] != ids[i]) {
			examples = append(examples, ids[i])
		}
	}
	return n, examples
}
