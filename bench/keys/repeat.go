package main

import (
	"slices"
)

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// aggregate returns one result whose every measured number is the median of
// that number over rs, the rounds of one key type.
func aggregate(rs []result) result {
	if len(rs) == 1 {
		return rs[0]
	}
	med := func(of func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = of(r)
		}
		return median(xs)
	}
	out := rs[0]
	out.Indexes = slices.Clone(rs[0].Indexes)
	out.LoadSeconds = med(func(r result) float64 { return r.LoadSeconds })
	out.GenSeconds = med(func(r result) float64 { return r.GenSeconds })
	out.CopySeconds = med(func(r result) float64 { return r.CopySeconds })
	out.InsertRate = med(func(r result) float64 { return r.InsertRate })
	out.TableBytes = int64(med(func(r result) float64 { return float64(r.TableBytes) }))
	out.WALBytes = int64(med(func(r result) float64 { return float64(r.WALBytes) }))
	out.WALRecords = int64(med(func(r result) float64 { return float64(r.WALRecords) }))
	out.WALFPI = int64(med(func(r result) float64 { return float64(r.WALFPI) }))
	out.LookupSeconds = med(func(r result) float64 { return r.LookupSeconds })
	out.LookupRate = med(func(r result) float64 { return r.LookupRate })
	for i := range out.Indexes {
		out.Indexes[i].Bytes = int64(med(func(r result) float64 { return float64(r.Indexes[i].Bytes) }))
		out.Indexes[i].LeafDensity = med(func(r result) float64 { return r.Indexes[i].LeafDensity })
		out.Indexes[i].LeafPages = int64(med(func(r result) float64 { return float64(r.Indexes[i].LeafPages) }))
		out.Indexes[i].TreeLevel = int64(med(func(r result) float64 { return float64(r.Indexes[i].TreeLevel) }))
	}
	return out
}
