package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const mib = 1 << 20

// column is one measured quantity of the results table.
type column struct {
	head string
	val  func(result) float64
	fmt  string
}

var columns = []column{
	{"insert rows/s (COPY)", func(r result) float64 { return r.InsertRate }, "%.0f"},
	{"key index MiB", func(r result) float64 { return float64(r.keyIndex().Bytes) / mib }, "%.1f"},
	{"all indexes MiB", func(r result) float64 { return float64(r.indexBytes()) / mib }, "%.1f"},
	{"heap MiB", func(r result) float64 { return float64(r.TableBytes) / mib }, "%.1f"},
	{"key leaf density %", func(r result) float64 { return r.keyIndex().LeafDensity }, "%.1f"},
	{"WAL MiB", func(r result) float64 { return float64(r.WALBytes) / mib }, "%.1f"},
	{"WAL bytes/row", func(r result) float64 { return float64(r.WALBytes) / float64(r.Rows) }, "%.0f"},
	{"full-page images", func(r result) float64 { return float64(r.WALFPI) }, "%.0f"},
	{"lookups/s", func(r result) float64 { return r.LookupRate }, "%.0f"},
}

// base returns the row the ratios are taken against: the snowfence BIGINT
// table, if it was measured.
func (r run) base() (result, bool) {
	for _, x := range r.Results {
		if x.Kind == "snowfence_bigint" {
			return x, true
		}
	}
	return result{}, false
}

// markdownTable is the results table: each cell the value and its ratio to
// the snowfence BIGINT row.
func markdownTable(r run) string {
	var b strings.Builder
	b.WriteString("| key |")
	for _, c := range columns {
		b.WriteString(" " + c.head + " |")
	}
	b.WriteString("\n|---|")
	for range columns {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	base, ok := r.base()
	for _, x := range r.Results {
		b.WriteString("| " + x.Label + " |")
		for _, c := range columns {
			v := c.val(x)
			cell := fmt.Sprintf(c.fmt, v)
			if bv := c.val(base); ok && bv != 0 {
				if q := v / bv; q >= 100 {
					cell += fmt.Sprintf(" (×%.0f)", q)
				} else {
					cell += fmt.Sprintf(" (×%.2f)", q)
				}
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func writeJSON(r run, path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeCSV(r run, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"kind", "round", "rows", "load_seconds", "insert_rows_per_second", "table_bytes",
		"index", "index_column", "key_index", "index_bytes", "avg_leaf_density", "leaf_pages", "tree_level",
		"wal_bytes", "wal_records", "wal_fpi", "lookups", "lookup_seconds", "lookups_per_second"})
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f64 := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	// One line per round and index (the table's own columns repeat), then
	// the medians as round "median".
	type line struct {
		round string
		x     result
	}
	var lines []line
	for _, rs := range r.Rounds {
		for i, x := range rs {
			lines = append(lines, line{strconv.Itoa(i + 1), x})
		}
	}
	for _, x := range r.Results {
		lines = append(lines, line{"median", x})
	}
	for _, l := range lines {
		x := l.x
		for _, ix := range x.Indexes {
			w.Write([]string{x.Kind, l.round, i64(x.Rows), f64(x.LoadSeconds), f64(x.InsertRate), i64(x.TableBytes),
				ix.Name, ix.Column, strconv.FormatBool(ix.Key), i64(ix.Bytes), f64(ix.LeafDensity), i64(ix.LeafPages), i64(ix.TreeLevel),
				i64(x.WALBytes), i64(x.WALRecords), i64(x.WALFPI), strconv.Itoa(x.Lookups), f64(x.LookupSeconds), f64(x.LookupRate)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rel returns target as a link from the directory of the file at from.
func rel(from, target string) string {
	if p, err := filepath.Rel(filepath.Dir(from), target); err == nil {
		return filepath.ToSlash(p)
	}
	return target
}

func (r run) setting(name string) string {
	for _, s := range r.Settings {
		if s.Name == name {
			return s.Value
		}
	}
	return "?"
}

func writeMarkdown(r run, path, png, jsonPath, csvPath string) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# What a key type costs in PostgreSQL\n\n")
	p("<!-- Written by bench/keys/run.sh: re-run it rather than editing this file. -->\n\n")
	if r.Rows < 10_000_000 {
		p("**Scaled-down run: %d rows per table, not the 10,000,000 of the full benchmark.** Small tables fit in memory many times over and see few checkpoints, so the ratios below understate what random keys cost at size.\n\n", r.Rows)
	}
	p("One table per key type, %s rows each, the same rows in the same order but for the key, loaded in COPY batches of %s and then measured. ", thousands(r.Rows), thousands(r.Batch))
	p("Made on %s, %s, with PostgreSQL %s on the same machine (one client connection over loopback), by\n\n", r.Started.Format("2006-01-02"), r.Machine, r.setting("server_version"))
	p("    %s\n\n", r.Command)
	p("which took %s in all. Each table was loaded and measured %d times, the key types in turn, and every number below is the median of its rounds (each round's rates are in the table after the plot: the machine is shared, and the rates vary more between rounds than the sizes do). Ratios (×) are against the snowfence BIGINT row: for sizes, WAL and full-page images above 1 is more, for insert and lookup rates above 1 is faster.\n\n", (time.Duration(r.Seconds) * time.Second).String(), r.Repeat)
	p("%s\n", markdownTable(r))
	if png != "" {
		p("![Index size, WAL bytes, time per insert and time per lookup of each key type, relative to snowfence BIGINT](%s)\n\n", rel(path, png))
	}
	p("The public ID table has two indexes: its lookups go through the unique `public_id` index (the \"key index\" column and the plot's lookups), and it also keeps a bigserial primary key, as such a table would in practice for its foreign keys and joins; \"all indexes\" counts both, and the plot's index bar is all indexes.\n\n")

	if r.Repeat > 1 {
		p("Rates in each round. Between rounds one key type's insert rate moved by up to %s of its median, and its lookup rate by up to %s: differences between key types smaller than that are noise of the shared machine. At about %.0f µs a lookup (over all key types), a lookup's time is most likely the fixed cost of one query's round trip, the same for every key type, more than the index's descent.\n\n", pct(r.spread(func(x result) float64 { return x.InsertRate })), pct(r.spread(func(x result) float64 { return x.LookupRate })), r.lookupMicros())
		p("| key | insert rows/s (COPY) | lookups/s |\n|---|--:|--:|\n")
		for i, x := range r.Results {
			var ins, look []string
			for _, rr := range r.Rounds[i] {
				ins = append(ins, fmt.Sprintf("%.0f", rr.InsertRate))
				look = append(look, fmt.Sprintf("%.0f", rr.LookupRate))
			}
			p("| %s | %s | %s |\n", x.Label, strings.Join(ins, ", "), strings.Join(look, ", "))
		}
		p("\n")
	}
	p("## Per index\n\n| table | index | column | MiB | leaf pages | avg leaf density %% | tree level |\n|---|---|---|--:|--:|--:|--:|\n")
	for _, x := range r.Results {
		for _, ix := range x.Indexes {
			p("| %s | %s | %s | %.1f | %d | %.1f | %d |\n", x.Label, ix.Name, ix.Column, float64(ix.Bytes)/mib, ix.LeafPages, ix.LeafDensity, ix.TreeLevel)
		}
	}

	if len(r.Sweep) > 0 {
		writeSweep(&b, r)
	}

	p("\n## Method\n\n")
	p("- **Tables.** `CREATE TABLE keys_<kind> (<key>, n bigint NOT NULL, note text NOT NULL)`, logged (WAL is measured); run.sh turns autovacuum off, so no vacuum's WAL lands in one table's load and not another's. The payload is the same for every table: `n` the row number, `note` a 12-character text (`r%%011d` of the row number). Keys:\n")
	for _, x := range r.Results {
		p("  - %s: %s.\n", x.Label, x.How)
	}
	p("- **Load.** Each table's load starts right after a `CHECKPOINT`. One connection sends COPY batches (pgx `CopyFrom`, binary) of %s rows, each its own transaction. The insert rate is rows over the time the load spent in COPY, from sending each batch to its commit; making the keys and rows in the client, which is not the database's cost, is left out (it was %s of the load's wall time at most, for %s).\n", thousands(r.Batch), pct(r.maxGenShare()), r.maxGenLabel())
	p("- **Index size** is `pg_relation_size` of each index after the load; **leaf density** is `pgstatindex(…).avg_leaf_density` (pgstattuple). A B-tree filled in key order splits its rightmost page 90/10 and stays about 90 %% full; one filled in random order splits pages in the middle and settles near 70 %%.\n")
	p("- **WAL bytes** are `pg_wal_lsn_diff(pg_current_wal_lsn())` from just after the CHECKPOINT to the end of the load: heap and index records, sequence records, commits, and full-page images. The full-page image count is `pg_stat_wal.wal_fpi` over the same span. With full_page_writes on, the first change to a page after each checkpoint logs the whole page. Ordered keys insert at the right edge of the index, into pages made since the checkpoint, which need no image; random keys spread their inserts over every leaf, so after each checkpoint nearly every leaf is logged whole again on its next insert. Checkpoints come as WAL approaches max_wal_size (%s) or every checkpoint_timeout (%s).\n", r.setting("max_wal_size"), r.setting("checkpoint_timeout"))
	p("- **Lookups.** %s rows sampled uniformly from each table during its load (reservoir sampling, seed %d), looked up one at a time in shuffled order by a prepared `SELECT n FROM keys_<kind> WHERE <key column> = $1`, each checked to return its own row. The cache is warm: the table and its indexes are loaded into shared_buffers with `pg_prewarm` first. ", thousands(int64(r.Lookups)), r.Seed)
	var largest result
	for _, x := range r.Results {
		if x.TableBytes+x.indexBytes() > largest.TableBytes+largest.indexBytes() {
			largest = x
		}
	}
	p("The largest table with its indexes (%s) is %.0f MiB, against shared_buffers of %s and %.1f GiB of RAM, and each table is dropped before the next is loaded: every lookup is served from shared_buffers, so the rates measure CPU and B-tree depth, not disk.\n", largest.Label, float64(largest.TableBytes+largest.indexBytes())/mib, r.setting("shared_buffers"), float64(r.Machine.MemBytes)/(1<<30))
	p("- **Server settings** (read back from the server; run.sh sets them when it starts the server):\n\n")
	p("  | setting | value |\n  |---|---|\n")
	for _, s := range r.Settings {
		p("  | %s | %s |\n", s.Name, s.Value)
	}
	p("\n- **Not measured.** Indexes larger than memory, where a random key's insert also waits for a page read (that widens the gap between ordered and random keys); many concurrent writers, where ordered keys contend for the rightmost leaf page (that narrows it); autovacuum; replication.\n")
	if jsonPath != "" || csvPath != "" {
		p("\nRaw numbers:")
		if jsonPath != "" {
			p(" [JSON](%s)", rel(path, jsonPath))
		}
		if csvPath != "" {
			p(" [CSV](%s)", rel(path, csvPath))
		}
		p(".\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeSweep writes the fleet-pattern sweep: the fleet-minted keys' index
// against how many IDs the fleet mints per millisecond.
func writeSweep(b *strings.Builder, r run) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n## How much interleaving ordered keys stand\n\n")
	p("The IDs of a fleet reach the database interleaved: within a millisecond each machine's IDs increase, but the machines' bursts arrive in turn, so a row often lands before rows already inserted. ")
	p("The tables above use a fleet of %d generators taking turns minting %d IDs each, %d turns per millisecond: %d IDs per millisecond. ", r.Machines, r.Burst, r.RoundsPer, r.Machines*r.Burst*r.RoundsPer)
	p("How full the index ends up depends on that rate, so the two fleet-minted key types were also loaded (%s rows each, same method, no lookups) with other patterns:\n\n", thousands(r.Sweep[0].Rows))
	p("| IDs per ms | burst × turns per ms | snowfence BIGINT index MiB | its leaf density %% | snowfence UUIDv8 index MiB | its leaf density %% |\n|--:|--:|--:|--:|--:|--:|\n")
	type cell struct{ mib, density float64 }
	var order []int
	at := map[int]map[string]cell{}
	pattern := map[int]string{}
	for _, s := range r.Sweep {
		if at[s.IDsPerMs] == nil {
			at[s.IDsPerMs] = map[string]cell{}
			order = append(order, s.IDsPerMs)
			pattern[s.IDsPerMs] = fmt.Sprintf("%d × %d", s.Burst, s.RoundsPerMs)
		}
		at[s.IDsPerMs][s.Kind] = cell{float64(s.IndexBytes) / mib, s.LeafDensity}
	}
	for _, n := range order {
		bi, u8 := at[n]["snowfence_bigint"], at[n]["uuidv8"]
		p("| %d | %s | %.1f | %.1f | %.1f | %.1f |\n", n, pattern[n], bi.mib, bi.density, u8.mib, u8.density)
	}
	p("\nA 12 × 1 pattern (one ID per machine per millisecond, machines in number order) is strictly increasing. ")
	p("While a millisecond's IDs take up a small part of a leaf page, the rightmost-page splits keep the index as full as a strictly increasing key's; ")
	p("once they fill a good part of a page (a leaf holds about %d BIGINT keys or %d UUIDs), the keys that land behind the rightmost page split pages in the middle, and the index fills like one of random keys. ", leafCapacity(8), leafCapacity(16))
	p("At 30 million IDs a day a fleet mints a few hundred IDs per second, well under one per millisecond; rows that arrive late by a few milliseconds interleave as a burst does here, about rate × delay rows at a time.\n")
}

// leafCapacity is about how many keys of a fixed width fit one B-tree leaf
// page: 8,192 bytes less the page header and special space, over the
// index tuple (8-byte header plus the key, MAXALIGNed) and its line pointer.
func leafCapacity(keyBytes int) int {
	tuple := (8 + keyBytes + 7) &^ 7
	return (8192 - 24 - 16) / (tuple + 4)
}

// lookupMicros is the mean time of a lookup over all key types' medians.
func (r run) lookupMicros() float64 {
	var sum float64
	for _, x := range r.Results {
		sum += 1e6 / x.LookupRate
	}
	return sum / float64(len(r.Results))
}

// spread returns the largest (max − min) / median of a rate over the rounds
// of one key type.
func (r run) spread(of func(result) float64) float64 {
	var m float64
	for i, rs := range r.Rounds {
		lo, hi := of(rs[0]), of(rs[0])
		for _, x := range rs {
			lo, hi = min(lo, of(x)), max(hi, of(x))
		}
		m = max(m, (hi-lo)/of(r.Results[i]))
	}
	return m
}

// maxGenShare returns the largest share of a load's wall time spent making
// keys and rows in the client.
func (r run) maxGenShare() float64 {
	var m float64
	for _, x := range r.Results {
		m = max(m, x.GenSeconds/x.LoadSeconds)
	}
	return m
}

func (r run) maxGenLabel() string {
	var m float64
	label := ""
	for _, x := range r.Results {
		if s := x.GenSeconds / x.LoadSeconds; s >= m {
			m, label = s, x.Label
		}
	}
	return label
}

func pct(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
