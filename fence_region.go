package snowfence

import "github.com/snowfence/snowfence/internal/revert"

// regionBitsRequired reports that a region other than 0 is refused under
// a layout without region bits: the stores lease machine numbers per
// region, so two regions' holders may hold the same number, and only the
// region bits keep their IDs apart. Load-bearing for uniqueness: change
// only with scripts/prove-search region.
func regionBitsRequired() bool {
	return !revert.Region
}

// regionInLayout is the region a grant of region mints under layout l:
// region itself, which chooseLayout then refuses unless it fits l's region
// bits (zero bits: region 0 only), so that two regions' holders of one
// machine number never mint the same IDs. Load-bearing for uniqueness:
// change only with scripts/prove-search region.
func regionInLayout(region int, l Layout) int {
	if revert.Region && l.RegionBits == 0 {
		return 0 // the old behaviour: the region was dropped
	}
	return region
}
