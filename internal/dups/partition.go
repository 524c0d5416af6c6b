package dups

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
)

const (
	// maxPartitions bounds the open temporary files; past it partitions
	// grow beyond the data area and are sorted externally.
	maxPartitions = 512
	// minWriteBuffer and maxWriteBuffer bound each partition's write
	// buffer, in IDs.
	minWriteBuffer = 512
	maxWriteBuffer = 8192
)

// partitions spreads IDs over temporary files by the top bits of a
// multiplicative (Fibonacci) hash, so every copy of an ID goes to the same
// file and IDs that share their top bits, as IDs of one day do, spread
// evenly.
type partitions struct {
	files  []*os.File
	bufs   [][]uint64
	counts []int64
	shift  uint
}

// newPartitions creates p (a power of two, at least 2) files in dir with
// write buffers of bufLen IDs.
func newPartitions(dir string, p, bufLen int) (*partitions, error) {
	ps := &partitions{
		files:  make([]*os.File, p),
		bufs:   make([][]uint64, p),
		counts: make([]int64, p),
		shift:  uint(64 - bits.TrailingZeros(uint(p))),
	}
	for i := range ps.files {
		f, err := os.CreateTemp(dir, fmt.Sprintf("part-%04d-*", i))
		if err != nil {
			return nil, errors.Join(err, ps.close())
		}
		ps.files[i] = f
		ps.bufs[i] = make([]uint64, 0, bufLen)
	}
	return ps, nil
}

// partitionOf returns the partition of id when there are 64 − shift bits of
// partition number.
func partitionOf(id uint64, shift uint) uint64 {
	return (id * 0x9E3779B97F4A7C15) >> shift
}

// add appends ids to their partitions.
func (ps *partitions) add(ids []uint64) error {
	for _, v := range ids {
		p := partitionOf(v, ps.shift)
		b := append(ps.bufs[p], v)
		if len(b) == cap(b) {
			if err := ps.write(int(p), b); err != nil {
				return err
			}
			b = b[:0]
		}
		ps.bufs[p] = b
	}
	return nil
}

// write appends b to partition p's file.
func (ps *partitions) write(p int, b []uint64) error {
	if _, err := ps.files[p].Write(bytesOf(b)); err != nil {
		return fmt.Errorf("write partition: %w", err)
	}
	ps.counts[p] += int64(len(b))
	return nil
}

// flush writes every buffer out.
func (ps *partitions) flush() error {
	for p, b := range ps.bufs {
		if len(b) > 0 {
			if err := ps.write(p, b); err != nil {
				return err
			}
			ps.bufs[p] = b[:0]
		}
	}
	return nil
}

// drop closes and removes partition p, once it is reported.
func (ps *partitions) drop(p int) error {
	f := ps.files[p]
	ps.files[p] = nil
	if f == nil {
		return nil
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// close closes and removes every file not dropped yet.
func (ps *partitions) close() error {
	var err error
	for p := range ps.files {
		err = errors.Join(err, ps.drop(p))
	}
	return err
}
