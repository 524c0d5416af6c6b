package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A Check is one expectation of a scenario: that node 5 refused, that the
// forward jump was alarmed, and so on.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// A Row is one scenario's outcome.
type Row struct {
	Scenario string `json:"scenario"`
	Name     string `json:"name"`
	// Store is the lease store the row ran on (Options.Store).
	Store string `json:"store,omitempty"`
	// Skipped says why the scenario did not run on the store: it does not
	// apply there ("n/a: …"), or the mode leaves it out. A skipped row
	// passes and counts nothing.
	Skipped string `json:"skipped,omitempty"`
	Seed    uint64 `json:"seed"`
	// Config is the configuration the scenario ran with: its drawn (and
	// fixed) timings, machine ranges and holder counts. Nil when it did
	// not run.
	Config *Config `json:"config,omitempty"`
	// IDs is every acknowledged ID: answered to a caller, or streamed by a
	// library holder.
	IDs int64 `json:"ids"`
	// Duplicates is what the oracle's PRIMARY KEY rejected;
	// DuplicatesMemory what the in-memory check found. Both must be 0.
	Duplicates       int64 `json:"duplicates"`
	DuplicatesMemory int64 `json:"duplicates_memory"`
	// OrderViolations counts IDs not above their lane's previous one.
	OrderViolations int64 `json:"order_violations"`
	// AheadOfClock counts IDs whose timestamp was after their arrival
	// (checked where the scenario asks).
	AheadOfClock int64 `json:"ahead_of_clock"`
	// Requests is the callers' requests; Refused the attempts a service
	// refused (503) plus library calls refused; Failed the attempts with
	// no answer (process down or frozen); Lost the requests no service
	// answered with IDs within the caller's deadline.
	Requests int64 `json:"requests"`
	Refused  int64 `json:"refused"`
	Failed   int64 `json:"failed_attempts"`
	Lost     int64 `json:"lost"`
	// RecoverMs is the longest time to recover the scenario measured, −1
	// if it has none; RecoverWhat says what was measured.
	RecoverMs   float64  `json:"recover_ms"`
	RecoverWhat string   `json:"recover_what,omitempty"`
	Seconds     float64  `json:"seconds"`
	Checks      []Check  `json:"checks"`
	Notes       []string `json:"notes,omitempty"`
	Failures    []string `json:"failures,omitempty"`
	Examples    []string `json:"examples,omitempty"`
	Error       string   `json:"error,omitempty"`
	Pass        bool     `json:"pass"`
}

// A Report is a run's rows.
type Report struct {
	Mode    string `json:"mode"`
	Seed    uint64 `json:"seed"`
	NoFence bool   `json:"no_fence"`
	// Stores are the lease stores of the rows, in the order they ran.
	Stores  []string  `json:"stores,omitempty"`
	Started time.Time `json:"started"`
	Elapsed string    `json:"elapsed"`
	Machine string    `json:"machine,omitempty"`
	Command string    `json:"command,omitempty"`
	Rows    []Row     `json:"rows"`
}

// Pass reports whether every row passed and at least one ran.
func (r *Report) Pass() bool {
	ran := false
	for _, row := range r.Rows {
		if !row.Pass {
			return false
		}
		ran = ran || row.Skipped == ""
	}
	return ran
}

// Merge appends other's rows and stores (a run on the next store) to r.
func (r *Report) Merge(other *Report) {
	r.Rows = append(r.Rows, other.Rows...)
	r.Stores = append(r.Stores, other.Stores...)
}

// Totals sums the rows.
func (r *Report) Totals() Row {
	t := Row{Scenario: "all", RecoverMs: -1, Pass: r.Pass()}
	for _, row := range r.Rows {
		t.IDs += row.IDs
		t.Duplicates += row.Duplicates
		t.DuplicatesMemory += row.DuplicatesMemory
		t.Refused += row.Refused
		t.Lost += row.Lost
		t.Requests += row.Requests
		t.Seconds += row.Seconds
	}
	return t
}

// Write writes report.md and report.json into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644)
}

// Markdown renders the table and each scenario's checks.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# snowfence chaos run: %s mode, seed %d", r.Mode, r.Seed)
	if r.NoFence {
		b.WriteString(", FENCE DISABLED (--unsafe-no-fence)")
	}
	fmt.Fprintf(&b, "\n\nStarted %s, took %s.", r.Started.Format(time.RFC3339), r.Elapsed)
	if r.Command != "" {
		fmt.Fprintf(&b, " Command: `%s`.", r.Command)
	}
	if r.Machine != "" {
		fmt.Fprintf(&b, " Machine: %s.", r.Machine)
	}
	groups := []string{""}
	if len(r.Stores) > 0 {
		groups = r.Stores
	}
	for _, store := range groups {
		rows := r.Rows
		if store != "" {
			rows = nil
			for _, row := range r.Rows {
				if row.Store == store {
					rows = append(rows, row)
				}
			}
			fmt.Fprintf(&b, "\n\n### Store: %s", store)
		}
		writeTable(&b, append(rows, (&Report{Rows: rows}).Totals()))
	}
	if len(groups) > 1 {
		t := r.Totals()
		fmt.Fprintf(&b, "\nEvery store: %s IDs, %d / %d duplicates, %s refused, %d lost; pass: %v.\n",
			thousands(t.IDs), t.Duplicates, t.DuplicatesMemory, thousands(t.Refused), t.Lost, r.Pass())
	}
	for _, row := range r.Rows {
		if row.Skipped != "" {
			continue
		}
		if row.Store != "" {
			fmt.Fprintf(&b, "\n## %s. %s (%s)\n\n", row.Scenario, row.Name, row.Store)
		} else {
			fmt.Fprintf(&b, "\n## %s. %s\n\n", row.Scenario, row.Name)
		}
		fmt.Fprintf(&b, "%s IDs in %.1f s; %s caller requests, %s refused attempts, %s attempts without an answer, %d lost; %d order violations, %d IDs ahead of the clock.\n\n",
			thousands(row.IDs), row.Seconds, thousands(row.Requests), thousands(row.Refused), thousands(row.Failed), row.Lost, row.OrderViolations, row.AheadOfClock)
		if row.Config != nil {
			fmt.Fprintf(&b, "Configuration: %s.\n\n", row.Config)
		}
		for _, c := range row.Checks {
			mark := "ok"
			if !c.OK {
				mark = "**FAILED**"
			}
			fmt.Fprintf(&b, "- %s — %s: %s\n", mark, c.Name, c.Detail)
		}
		for _, s := range row.Failures {
			fmt.Fprintf(&b, "- **failure**: %s\n", s)
		}
		for _, s := range row.Notes {
			fmt.Fprintf(&b, "- note: %s\n", s)
		}
		for _, s := range row.Examples {
			fmt.Fprintf(&b, "- example: %s\n", s)
		}
		if row.Error != "" {
			fmt.Fprintf(&b, "- **error**: %s\n", row.Error)
		}
	}
	return b.String()
}

// writeTable writes the table of rows, the last one their totals.
func writeTable(b *strings.Builder, rows []Row) {
	b.WriteString("\n\n| scenario | IDs issued | duplicates (PK / memory) | requests refused | requests lost | time to recover | pass |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---|\n")
	for _, row := range rows {
		name := row.Scenario
		if row.Name != "" {
			name += ". " + row.Name
		}
		if row.Skipped != "" {
			fmt.Fprintf(b, "| %s | — | — | — | — | — | %s |\n", name, row.Skipped)
			continue
		}
		rec := "—"
		if row.RecoverMs >= 0 {
			rec = fmt.Sprintf("%.0f ms (%s)", row.RecoverMs, row.RecoverWhat)
		}
		pass := "yes"
		if !row.Pass {
			pass = "**NO**"
		}
		fmt.Fprintf(b, "| %s | %s | %d / %d | %s | %d | %s | %s |\n", name, thousands(row.IDs),
			row.Duplicates, row.DuplicatesMemory, thousands(row.Refused), row.Lost, rec, pass)
	}
}

// thousands formats n with thin separators: 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
