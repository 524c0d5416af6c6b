package dups

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultMemory is the memory budget of a zero Config: 512 MiB.
const DefaultMemory = 512 << 20

// MinMemory is the smallest memory budget a Finder takes: 64 KiB (small
// budgets exist for tests, which force the partitioned path with them).
const MinMemory = 64 << 10

// ErrMemory reports a memory budget a Finder cannot work in: below
// MinMemory, or too small for the input's skew (one partition so large
// that its external sort would need more run files than it may open).
var ErrMemory = errors.New("dups: memory budget too small")

// Config is a Finder's configuration. The zero value is a valid
// configuration: 512 MiB in os.TempDir().
type Config struct {
	// Memory is the memory budget in bytes (see the package doc for how it
	// is shared). Zero means DefaultMemory.
	Memory int64
	// TempDir is the directory of the partitions' temporary files. "" means
	// os.TempDir(). The files go in a directory of their own, removed by
	// Close.
	TempDir string
	// ExpectedIDs, if not nil, estimates the input's total number of IDs
	// when seen have been added and the memory is full; the number of
	// partitions is chosen from it. nil, or an estimate below seen, means
	// twice seen.
	ExpectedIDs func(seen int64) int64
}

// A Finder collects IDs (Add) and then reports those added more than once
// (Duplicates). Close removes its temporary files.
type Finder struct {
	cfg     Config
	dataCap int // IDs the data area holds
	data    []uint64
	scratch []uint64
	parts   *partitions // nil while the IDs are in memory
	seen    int64
	dir     string // the temporary directory, once made
}

// NewFinder returns a Finder for cfg.
func NewFinder(cfg Config) (*Finder, error) {
	if cfg.Memory == 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.Memory < MinMemory {
		return nil, fmt.Errorf("%w: %d bytes is below the minimum %d", ErrMemory, cfg.Memory, MinMemory)
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	return &Finder{cfg: cfg, dataCap: int(cfg.Memory * 3 / 8 / 8)}, nil
}

// Seen returns the number of IDs added.
func (f *Finder) Seen() int64 { return f.seen }

// Partitions returns the number of partitions the IDs were spilled to, 0
// while they are all in memory.
func (f *Finder) Partitions() int {
	if f.parts == nil {
		return 0
	}
	return len(f.parts.files)
}

// Add adds ids. The Finder does not keep the slice.
func (f *Finder) Add(ids []uint64) error {
	f.seen += int64(len(ids))
	if f.parts != nil {
		return f.parts.add(ids)
	}
	if len(f.data)+len(ids) > f.dataCap {
		if err := f.spill(); err != nil {
			return err
		}
		return f.parts.add(ids)
	}
	if len(f.data)+len(ids) > cap(f.data) {
		f.grow(len(f.data) + len(ids))
	}
	f.data = append(f.data, ids...)
	return nil
}

// grow makes room in the data area for n IDs: room for the expected
// number of IDs and a sixteenth more, or else twice as much as now, so that
// small inputs never take the whole budget and large ones are not copied
// again and again (the old copies are garbage that counts against it).
func (f *Finder) grow(n int) {
	c := max(2*cap(f.data), n, 4096)
	if f.cfg.ExpectedIDs != nil {
		if e := f.cfg.ExpectedIDs(f.seen); e > int64(n) {
			c = int(min(e+e/16, int64(f.dataCap)))
		}
	}
	c = max(min(c, f.dataCap), n)
	d := make([]uint64, len(f.data), c)
	copy(d, f.data)
	f.data = d
}

// spill opens the partitions, sized from the expected number of IDs, and
// moves the data area's IDs into them.
func (f *Finder) spill() error {
	want := 2 * f.seen
	if f.cfg.ExpectedIDs != nil {
		if e := f.cfg.ExpectedIDs(f.seen); e > f.seen {
			want = e
		}
	}
	// A quarter of headroom for the hash's unevenness.
	n := want*5/4/int64(f.dataCap) + 1
	p := 2
	for int64(p) < n && p < maxPartitions {
		p *= 2
	}
	dir, err := os.MkdirTemp(f.cfg.TempDir, "snowfence-dups-*")
	if err != nil {
		return err
	}
	f.dir = dir
	bufLen := int(f.cfg.Memory / 8 / 8 / int64(p))
	bufLen = min(max(bufLen, minWriteBuffer), maxWriteBuffer)
	if f.parts, err = newPartitions(dir, p, bufLen); err != nil {
		return err
	}
	err = f.parts.add(f.data)
	f.data = f.data[:0]
	return err
}

// Duplicates calls fn for every ID added more than once, with its number of
// copies, in the order the package doc describes. An error from fn stops it
// and is returned.
func (f *Finder) Duplicates(ctx context.Context, fn func(id uint64, count int64) error) error {
	if f.parts == nil {
		if len(f.scratch) < len(f.data) {
			f.scratch = make([]uint64, len(f.data))
		}
		sortIDs(f.data, f.scratch)
		return runs(f.data, fn)
	}
	if err := f.parts.flush(); err != nil {
		return err
	}
	if cap(f.data) < f.dataCap {
		f.data = make([]uint64, 0, f.dataCap)
	}
	if len(f.scratch) < f.dataCap {
		f.scratch = make([]uint64, f.dataCap)
	}
	for i, file := range f.parts.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := f.parts.counts[i]
		var err error
		if n <= int64(f.dataCap) {
			err = f.inMemory(file, int(n), fn)
		} else {
			err = f.external(file, n, fn)
		}
		if err != nil {
			return err
		}
		if err := f.parts.drop(i); err != nil {
			return err
		}
	}
	return nil
}

// inMemory reads a partition of n IDs whole, sorts it and reports its runs.
func (f *Finder) inMemory(file *os.File, n int, fn func(uint64, int64) error) error {
	ids := f.data[:n]
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.ReadFull(file, bytesOf(ids)); err != nil {
		return fmt.Errorf("read back partition %s: %w", file.Name(), err)
	}
	sortIDs(ids, f.scratch)
	return runs(ids, fn)
}

// Close removes the temporary files. The Finder is not usable after it.
func (f *Finder) Close() error {
	var err error
	if f.parts != nil {
		err = f.parts.close()
	}
	if f.dir != "" {
		err = errors.Join(err, os.RemoveAll(f.dir))
	}
	f.data, f.scratch, f.parts = nil, nil, nil
	return err
}

// runs calls fn for every run longer than one in sorted ids.
func runs(ids []uint64, fn func(uint64, int64) error) error {
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		if j-i > 1 {
			if err := fn(ids[i], int64(j-i)); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}
