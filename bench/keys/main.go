// Command keys measures what a primary-key type costs in PostgreSQL: one
// table per key type (snowfence BIGINT from an interleaved fleet of
// generators, bigserial, UUIDv4, UUIDv7, snowfence's UUIDv8 form, and a
// random public ID in a unique text column), loaded with the same rows in
// COPY batches, then measured for insert rate, index size, leaf density,
// WAL bytes and point-lookup rate. It writes a markdown report, a PNG plot
// and the raw numbers as JSON and CSV.
//
// Run it through bench/keys/run.sh, which starts a PostgreSQL with the
// settings the report states; see that script for ROWS and the outputs.
// With -render it rewrites the outputs from an earlier run's JSON instead
// of measuring.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// run is everything the outputs are made from.
type run struct {
	Command   string    `json:"command"`
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	Machine   machine   `json:"machine"`
	Settings  []setting `json:"settings"`
	Rows      int64     `json:"rows"`
	Batch     int64     `json:"batch"`
	Lookups   int       `json:"lookups"`
	Seed      uint64    `json:"seed"`
	Machines  int       `json:"fleet_machines"`
	Burst     int       `json:"fleet_burst"`
	RoundsPer int       `json:"fleet_rounds_per_ms"`
	Repeat    int       `json:"repeat"`
	// Results are the medians over the rounds of each key type, Rounds
	// every round's own numbers (Rounds[kind][round]).
	Results []result   `json:"results"`
	Rounds  [][]result `json:"rounds"`
	// Sweep is the fleet-pattern sweep, if it ran.
	Sweep []sweepPoint `json:"sweep,omitempty"`
}

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "keys:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var (
		url       = flag.String("url", os.Getenv("SNOWFENCE_TEST_POSTGRES_URL"), "PostgreSQL URL (default $SNOWFENCE_TEST_POSTGRES_URL)")
		rows      = flag.Int64("rows", 10_000_000, "rows per table")
		batch     = flag.Int64("batch", 10_000, "rows per COPY batch (one transaction each)")
		lookups   = flag.Int("lookups", 200_000, "point lookups per table (at most rows)")
		machines  = flag.Int("machines", 12, "snowfence generators in the fleet")
		burst     = flag.Int("burst", 2, "IDs a fleet generator mints per turn")
		rounds    = flag.Int("rounds-per-ms", 4, "turns of the whole fleet per millisecond of its clock")
		seed      = flag.Uint64("seed", 1, "seed of the lookup sampling")
		only      = flag.String("only", "", "comma-separated key kinds to measure (default all; the first kind, snowfence_bigint, is needed for ratios)")
		sweepRows = flag.Int64("sweep-rows", 1_000_000, "rows per table of the fleet-pattern sweep (0 skips it)")
		repeat    = flag.Int("repeat", 3, "rounds of all the key types, in turn; the report gives each number's median")
		render    = flag.String("render", "", "write the outputs from this JSON of an earlier run instead of measuring")
		keep      = flag.Bool("keep", false, "keep the tables (default: drop each after measuring it)")
		timeout   = flag.Duration("timeout", 60*time.Minute, "refuse to run longer than this in total")
		command   = flag.String("command", "bench/keys/run.sh", "the command line recorded in the report")
		md        = flag.String("md", "", "markdown report to write")
		png       = flag.String("png", "", "PNG plot to write")
		jsonOut   = flag.String("json", "", "raw results (JSON) to write")
		csvOut    = flag.String("csv", "", "raw results (CSV) to write")
	)
	flag.Parse()
	if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			return err
		}
		var r run
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", *render, err)
		}
		if *jsonOut == "" {
			*jsonOut = *render // for the report's link; rewritten unchanged
		}
		return r.write(*md, *png, *jsonOut, *csvOut)
	}
	if *url == "" {
		return errors.New("no PostgreSQL URL: give -url or set SNOWFENCE_TEST_POSTGRES_URL (bench/keys/run.sh starts a server)")
	}
	if *rows < 1 || *batch < 1 || *lookups < 1 || *repeat < 1 {
		return errors.New("-rows, -batch, -lookups and -repeat must be at least 1")
	}
	fc := fleetConfig{machines: *machines, burst: *burst, roundsPerMs: *rounds}
	all := kinds(fc)
	todo := all
	if *only != "" {
		todo = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(all, func(k kind) bool { return k.name == name })
			if i < 0 {
				return fmt.Errorf("-only: unknown kind %q", name)
			}
			todo = append(todo, all[i])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, *url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	r := run{
		Command: *command, Started: time.Now().UTC(), Machine: describeMachine(),
		Rows: *rows, Batch: *batch, Lookups: int(min(int64(*lookups), *rows)), Seed: *seed,
		Repeat: *repeat, Machines: fc.machines, Burst: fc.burst, RoundsPer: fc.roundsPerMs,
	}
	if r.Settings, err = readSettings(ctx, conn); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "keys: %s\n", r.Machine)
	for _, s := range r.Settings {
		fmt.Fprintf(os.Stderr, "keys: %-28s = %s\n", s.Name, s.Value)
	}
	if err := checkSettings(r.Settings); err != nil {
		return err
	}
	if err := prepare(ctx, conn); err != nil {
		return err
	}
	rc := runConfig{rows: *rows, batch: *batch, lookups: *lookups, seed: *seed, keep: *keep, progress: os.Stderr}
	// Rounds take the key types in turn, so a slow spell of a shared
	// machine falls on every type alike rather than on one.
	r.Rounds = make([][]result, len(todo))
	for round := range *repeat {
		for i, k := range todo {
			fmt.Fprintf(os.Stderr, "keys: round %d/%d, %s: %d rows (%.0f s so far)\n", round+1, *repeat, k.name, *rows, time.Since(r.Started).Seconds())
			res, err := measure(ctx, conn, k, rc)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("stopped after %s (-timeout): %w", *timeout, err)
				}
				return err
			}
			r.Rounds[i] = append(r.Rounds[i], res)
		}
	}
	for _, rs := range r.Rounds {
		r.Results = append(r.Results, aggregate(rs))
	}
	if *sweepRows > 0 {
		src := rc
		src.rows = *sweepRows
		if r.Sweep, err = sweep(ctx, conn, fc.machines, src); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("stopped after %s (-timeout): %w", *timeout, err)
			}
			return err
		}
	}
	r.Seconds = time.Since(r.Started).Seconds()
	fmt.Fprintf(os.Stderr, "keys: done in %.0f s\n", r.Seconds)
	fmt.Print(markdownTable(r))
	return r.write(*md, *png, *jsonOut, *csvOut)
}

// write writes the outputs whose paths are not empty.
func (r run) write(md, png, jsonPath, csvPath string) error {
	if jsonPath != "" {
		if err := writeJSON(r, jsonPath); err != nil {
			return err
		}
	}
	if csvPath != "" {
		if err := writeCSV(r, csvPath); err != nil {
			return err
		}
	}
	if png != "" {
		if err := writePlot(r, png); err != nil {
			return err
		}
	}
	if md != "" {
		return writeMarkdown(r, md, png, jsonPath, csvPath)
	}
	return nil
}
