package main

import (
	"bufio"
	"context"

	"github.com/snowfence/snowfence"
)

// maxUUIDCount bounds snowfence uuid -n: enough for any script, small
// enough that a typo does not fill a disk.
const maxUUIDCount = 10_000_000

// runUUID prints -n UUIDv7 values (default 1), one per line, in increasing
// order. It needs no lease store: a UUIDv7 rests on its random bits.
func runUUID(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "uuid")
	n := fs.Int("n", 1, "how many UUIDv7 to print, 1 to 10000000")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("takes no arguments; usage: snowfence uuid [-n N]")
	}
	if *n < 1 || *n > maxUUIDCount {
		return usagef("-n %d is out of range; give 1 to %d", *n, maxUUIDCount)
	}
	g := snowfence.NewUUIDGenerator(nil)
	w := bufio.NewWriter(e.stdout)
	line := make([]byte, 0, 37)
	for range *n {
		line, _ = g.Next().AppendText(line[:0])
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}
