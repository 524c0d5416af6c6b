package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/dups"
)

const dupsUsage = `usage: snowfence dups FILE… [--column N|NAME] [--memory SIZE] [--tmp DIR] [--schedule …] [--json] [--show-bad N] [--max-bad N] [--who [store flags]]
Finds the IDs that occur more than once in FILEs: one ID per line (decimal, or the UUIDv8 form),
or with --column the IDs of one CSV column (its number from 1, or its name in the header). A file
whose name ends in .gz is read through gzip. Inputs larger than --memory are partitioned into
temporary files in --tmp and sorted one partition at a time.
Prints each duplicate with its count and decode (with --json one object per line); bad lines
(no ID) and a summary go to stderr. With --who, each duplicate also names the holder that minted it,
from the lease store's journal (as snowfence who does). A line that holds no ID or cannot be read (a
CSV quote left open swallows every line up to the next quote) may hide a duplicate, so more than
--max-bad such lines (default 0) is a failure, whatever else was found. Exit status: 0 no duplicates
in input read whole, 1 duplicates found, 2 lines not read (more than --max-bad), error or usage.`

// whoFunc names the holder that minted id (snowfence who), for dups to
// print beside each duplicate.
type whoFunc func(ctx context.Context, id snowfence.ID) (string, error)

// runDups is snowfence dups without a who lookup; dupsWith takes one.
func runDups(ctx context.Context, e env, args []string) error {
	return dupsWith(ctx, e, args, nil)
}

// errDuplicatesFound is dups's result when it found duplicates: exit
// status 1.
var errDuplicatesFound = errors.New("duplicates found")

// dupsWith runs snowfence dups, asking who (if not nil) who minted each
// duplicate. Its exit statuses are grep's: 1 means found, so every
// failure is returned as a usageError (status 2), and a successful run
// that found duplicates returns errDuplicatesFound (status 1).
func dupsWith(ctx context.Context, e env, args []string, who whoFunc) error {
	fs := newFlags(e, "dups")
	column := fs.String("column", "", "read the files as CSV and take the IDs from this column: its number from 1, or its name in the header")
	memory := fs.String("memory", "512MiB", "memory budget, e.g. 256MiB, 2GiB; larger inputs are partitioned to temporary files")
	tmp := fs.String("tmp", "", "directory of the temporary partitions (default the system's, $TMPDIR or /tmp)")
	schedText := fs.String("schedule", "", `layout schedule to decode with, e.g. "v1,v2@2028-01-01T00:00:00Z" (default v1)`)
	asJSON := fs.Bool("json", false, "print one JSON object per duplicate")
	showBad := fs.Int("show-bad", 20, "print at most this many bad lines (all are counted)")
	maxBad := fs.Int64("max-bad", 0, "lines that hold no ID or cannot be read to accept before failing with status 2 (each may hide a duplicate)")
	askWho := fs.Bool("who", false, "ask the lease store (the store flags, as for snowfence who) which holder minted each duplicate; decode with the fleet schedule unless --schedule is given")
	var sf storeFlags
	sf.register(fs)
	files, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if *maxBad < 0 {
		return usagef("--max-bad %d is negative", *maxBad)
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("%s", dupsUsage)
	}
	budget, err := parseSize(*memory)
	if err != nil {
		return usagef("--memory %q: %v", *memory, err)
	}
	sched, err := snowfence.ParseSchedule(*schedText)
	if err != nil {
		return usageError{err}
	}
	if *askWho && who == nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		w, err := openWho(wctx, &sf, *schedText)
		cancel()
		if err != nil {
			return usageError{err}
		}
		defer w.Close()
		sched = w.sched
		who = func(ctx context.Context, id snowfence.ID) (string, error) {
			ans, err := w.lookup(ctx, id)
			if err != nil {
				return "", err
			}
			return ans.summary(), nil
		}
	}
	// The budget bounds the finder's own buffers; the memory limit keeps
	// the garbage collector to it as well, with room for the runtime's own.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(budget + 32<<20))

	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	var bad int64
	opts := dups.Options{
		Config:   dups.Config{Memory: budget, TempDir: *tmp},
		Column:   *column,
		Schedule: sched,
		OnBad: func(b dups.BadLine) {
			bad++ // reports, one per bad line or swallowed span
			if bad <= int64(*showBad) {
				fmt.Fprintf(e.stderr, "%s:%d: %s: %s\n", b.File, b.Line, b.Reason, strconv.Quote(b.Text))
			}
		},
	}
	sum, err := dups.Scan(ctx, opts, files, func(d dups.Duplicate) error {
		return printDuplicate(ctx, out, sched, who, d, *asJSON)
	})
	if err != nil {
		return usageError{err}
	}
	if err := out.Flush(); err != nil {
		return usageError{err}
	}
	if bad > int64(*showBad) {
		fmt.Fprintf(e.stderr, "… and %d more bad lines\n", bad-int64(*showBad))
	}
	fmt.Fprintf(e.stderr, "read %d IDs from %d %s, %d bad %s; %d %s more than once, %d extra %s\n",
		sum.IDs, sum.Files, plural(sum.Files, "file", "files"), sum.Bad, plural(int(sum.Bad), "line", "lines"),
		sum.Duplicates, plural(int(sum.Duplicates), "ID occurs", "IDs occur"), sum.Extra, plural(int(sum.Extra), "copy", "copies"))
	if sum.Bad > *maxBad {
		return usageError{fmt.Errorf("%d %s could not be read as IDs (more than --max-bad %d): any duplicate among them was not found; fix the input, or raise --max-bad if those lines hold no IDs",
			sum.Bad, plural(int(sum.Bad), "line", "lines"), *maxBad)}
	}
	if sum.Duplicates > 0 {
		return errDuplicatesFound
	}
	return nil
}

// dupJSON is one duplicate as --json prints it.
type dupJSON struct {
	ID       snowfence.ID      `json:"id"`
	Count    int64             `json:"count"`
	Decode   snowfence.Decoded `json:"decode"`
	Who      string            `json:"who,omitempty"`
	WhoError string            `json:"who_error,omitempty"`
}

// printDuplicate prints one duplicate: the ID, its count, its decode and,
// with a who lookup, its holder.
func printDuplicate(ctx context.Context, w *bufio.Writer, sched snowfence.Schedule, who whoFunc, d dups.Duplicate, asJSON bool) error {
	dec, err := sched.Decode(d.ID)
	if err != nil {
		return err
	}
	var holder, whoErr string
	if who != nil {
		if holder, err = who(ctx, d.ID); err != nil {
			whoErr = err.Error()
		}
	}
	if asJSON {
		b, err := json.Marshal(dupJSON{ID: d.ID, Count: d.Count, Decode: dec, Who: holder, WhoError: whoErr})
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	}
	fmt.Fprintf(w, "%s count=%d layout=%s created_at=%s region=%s machine=%d sequence=%d",
		d.ID, d.Count, dec.Layout, dec.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), dec.Region, dec.Machine, dec.Sequence)
	switch {
	case whoErr != "":
		fmt.Fprintf(w, " who_error=%s", strconv.Quote(whoErr))
	case who != nil:
		fmt.Fprintf(w, " who=%s", strconv.Quote(holder))
	}
	return w.WriteByte('\n')
}

// parseSize reads a byte count: a whole number with an optional binary
// unit, K, M, G or KiB, MiB, GiB.
func parseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("give a positive size such as 512MiB")
	}
	shift, ok := map[string]uint{"": 0, "B": 0, "K": 10, "KiB": 10, "M": 20, "MiB": 20, "G": 30, "GiB": 30}[s[i:]]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q; give K, M, G or KiB, MiB, GiB", s[i:])
	}
	if n > 1<<(62-shift) {
		return 0, errors.New("too large")
	}
	return n << shift, nil
}
