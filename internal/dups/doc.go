// Package dups finds the IDs that occur more than once in exported data,
// in bounded memory, however large the input.
//
// # How it works
//
// IDs are read (Scan: one per line, or one column of a CSV file) and kept
// as uint64s in memory while they fit the memory budget's data area. If
// the input ends first, the IDs are sorted in memory and the runs longer
// than one are the duplicates. Otherwise the IDs spill: they are
// partitioned by a multiplicative hash of the ID into temporary files of
// raw uint64s (never text), so that every copy of an ID lands in the same
// partition and each partition, at the rate of IDs per input byte seen so
// far, fits the data area. Each partition is then read back whole, radix
// sorted and scanned for runs. A partition that still does not fit (the
// input was skewed: one ID copied millions of times, or the size estimate
// was wrong) is sorted externally instead: sorted chunks written to run
// files, then merged.
//
// # Memory
//
// Config.Memory bounds the heap the finder uses: three eighths for the
// data area, three eighths for the radix sort's scratch area (allocated
// only when there is something to sort), the rest for the partition
// writers' buffers and the read buffer. Input is never held as text.
//
// # Order
//
// Duplicates are reported in ascending order of ID within a partition.
// With the input in memory there is one partition, so the order is
// ascending; after a spill the partitions come in hash order.
//
// # Concurrency
//
// A Finder is used by one goroutine. Scan opens and reads the files one
// after another.
package dups
