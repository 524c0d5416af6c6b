package dups

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxRuns bounds the run files of one external sort.
const maxRuns = 1024

// external sorts a partition of n IDs that does not fit the data area: it
// sorts it in chunks of the data area's size, writes each chunk to a run
// file, and merges the runs, counting equal IDs as they come out. This is
// the path of a skewed input, such as one ID copied millions of times.
func (f *Finder) external(file *os.File, n int64, fn func(uint64, int64) error) error {
	k := (n + int64(f.dataCap) - 1) / int64(f.dataCap)
	if k > maxRuns {
		return fmt.Errorf("%w: a partition of %d IDs would need %d sorted runs of %d (at most %d); give more memory",
			ErrMemory, n, k, f.dataCap, maxRuns)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var rs []*runReader
	defer func() {
		for _, r := range rs {
			r.f.Close()
			os.Remove(r.f.Name())
		}
	}()
	for left := n; left > 0; {
		c := min(left, int64(f.dataCap))
		ids := f.data[:c]
		if _, err := io.ReadFull(file, bytesOf(ids)); err != nil {
			return fmt.Errorf("read back partition %s: %w", file.Name(), err)
		}
		sortIDs(ids, f.scratch)
		rf, err := os.CreateTemp(f.dir, "run-*")
		if err != nil {
			return err
		}
		rs = append(rs, &runReader{f: rf})
		if _, err := rf.Write(bytesOf(ids)); err != nil {
			return fmt.Errorf("write sorted run: %w", err)
		}
		if _, err := rf.Seek(0, io.SeekStart); err != nil {
			return err
		}
		left -= c
	}
	// Each run reads through its share of the data area.
	share := f.dataCap / len(rs)
	h := make(runHeap, 0, len(rs))
	for i, r := range rs {
		r.buf = f.data[i*share : (i+1)*share : (i+1)*share]
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, r)
		}
	}
	heap.Init(&h)
	var cur uint64
	var count int64
	for len(h) > 0 {
		r := h[0]
		v := r.head
		if count > 0 && v == cur {
			count++
		} else {
			if count > 1 {
				if err := fn(cur, count); err != nil {
					return err
				}
			}
			cur, count = v, 1
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	if count > 1 {
		return fn(cur, count)
	}
	return nil
}

// runReader reads one sorted run file through a buffer.
type runReader struct {
	f        *os.File
	buf      []uint64
	pos, end int
	head     uint64
}

// next moves head to the run's next ID, reporting false at its end.
func (r *runReader) next() (bool, error) {
	if r.pos == r.end {
		n, err := io.ReadFull(r.f, bytesOf(r.buf[:cap(r.buf)]))
		if n%8 != 0 {
			return false, fmt.Errorf("sorted run %s: torn read", r.f.Name())
		}
		if n == 0 && (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) {
			return false, nil
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			return false, err
		}
		r.pos, r.end = 0, n/8
	}
	r.head = r.buf[r.pos]
	r.pos++
	return true, nil
}

// runHeap orders runs by their head ID.
type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].head < h[j].head }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
