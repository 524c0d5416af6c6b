// Command gen writes the input of the dups benchmark: N IDs, one per line
// in decimal, as 8 holders of the v1 layout mint them over one day
// (each holder's clock advancing by 0 to 13 ms between IDs, the sequence
// counting up within a millisecond), interleaved at random as a table
// export of several writers is. Every so often it repeats an ID it wrote
// earlier: D distinct IDs copied, one in ten of them three times. It
// prints the planted figures to stderr: "planted D distinct, E extra".
//
//	go run ./dups/gen -n 100000000 -dups 1000 -seed 1 > /tmp/ids.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/snowfence/snowfence"
)

func main() {
	n := flag.Int64("n", 100_000_000, "IDs to write, copies included")
	planted := flag.Int64("dups", 1000, "distinct IDs to copy")
	seed := flag.Uint64("seed", 1, "random seed")
	machines := flag.Int("machines", 8, "holders")
	flag.Parse()
	if err := gen(*n, *planted, *seed, *machines); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func gen(n, planted int64, seed uint64, machines int) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	l := snowfence.V1()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	start := day.Sub(l.Epoch).Milliseconds()
	type holder struct {
		machine  int
		tick     int64
		sequence int
	}
	hs := make([]holder, machines)
	for i := range hs {
		hs[i] = holder{machine: 17 + 5*i, tick: start}
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	line := make([]byte, 0, 24)
	// The copies: at a random point of the file, an ID from the last
	// million written is written again.
	recent := make([]uint64, min(1<<20, n/2))
	every := (n - int64(len(recent))) / max(planted+planted/10+1, 1)
	var extra, copied int64
	chosen := map[uint64]bool{} // each planted ID is copied once (or twice)
	for i := int64(0); i < n; i++ {
		var id uint64
		if every > 0 && i > int64(len(recent)) && i%every == every/2 && copied < planted {
			for id = recent[rng.IntN(len(recent))]; chosen[id]; {
				id = recent[rng.IntN(len(recent))]
			}
			chosen[id] = true
			copied++
			extra++
			if copied%10 == 0 { // one in ten three times
				line = strconv.AppendUint(line[:0], id, 10)
				line = append(line, '\n')
				w.Write(line)
				i++
				extra++
			}
		} else {
			h := &hs[rng.IntN(len(hs))]
			if gap := rng.Int64N(14); gap > 0 || h.sequence == 4095 {
				h.tick += max(gap, 1)
				h.sequence = 0
			} else {
				h.sequence++
			}
			v, err := l.Compose(h.tick, 0, h.machine, h.sequence)
			if err != nil {
				return err
			}
			id = uint64(v)
			recent[i%int64(len(recent))] = id
		}
		line = strconv.AppendUint(line[:0], id, 10)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "planted %d distinct, %d extra\n", copied, extra)
	return w.Flush()
}
