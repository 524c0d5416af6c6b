package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// runbookScenario plays the runbook's two procedures against real
// processes and returns every example it shows, in order.
//
// The duplicate incident: a holder of machine 37 mints IDs into an export;
// a second export carries one of them again (as a process outside the
// fence would: a library holder started with a fixed machine number, say)
// and another three times. dups finds them, decode and who trace them to
// the holder, history shows the number's journal, quarantine stops the
// number (the holder's /healthz turns to fenced at its mark), the holder
// is stopped and the journal shows how its holding ended.
//
// The clock step: a holder's wall clock is stepped back (through the
// test-only --test-clock-offset endpoint); /healthz and a mint show the
// refusal, and it recovers by itself once the clock passes its last ID.
//
// store are the flags that point serve and the CLI at the lease store, and
// holder the further flags of the scenario's holders (timings short enough
// for a quarantined holder to stop within the scenario's bound).
func runbookScenario(t *testing.T, store, holder []string) []runbookStep {
	var steps []runbookStep
	add := func(s runbookStep) { steps = append(steps, s) }

	// Detect.
	h := startService(t, t.TempDir(), slices.Concat(store, holder, []string{"--machines", "37-37", "--admin-listen", "127.0.0.1:0"})...)
	ids := mintUntilReady(t, h, 1000, 60*time.Second)
	dir := t.TempDir()
	writeExport(t, filepath.Join(dir, "orders.csv"), ids[:600])
	rogue := []snowfence.ID{ids[9], ids[500], ids[500], ids[700], ids[701]}
	writeExport(t, filepath.Join(dir, "orders-eu.csv"), append(append([]snowfence.ID{}, ids[600:]...), rogue...))
	dup := ids[9]
	steps = append(steps, runbookDups(t, store, dir)...)

	// Decode and who.
	add(runbookCLI(t, "decode", 0, nil, "decode", dup.String()))
	add(runbookCLI(t, "who", 0, store, "who", dup.String()))
	add(runbookCLI(t, "history", 0, store, "leases", "history", "37"))

	// Quarantine: the holder stops at its mark.
	add(runbookCLI(t, "quarantine", 0, store, "leases", "quarantine", "37"))
	deadline := time.Now().Add(30 * time.Second)
	var fenced reply
	for {
		// The steady state the runbook shows: refusing, and the claim
		// after the loss has found no other number (until then the last
		// error is the loss itself).
		fenced = call(t, "GET", h.admin+"/healthz", "", "")
		if fenced.status == http.StatusServiceUnavailable && strings.Contains(fenced.body, "no free machine number in range") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder of a quarantined number not refusing with its re-claim failed after 30 s: %d %s", fenced.status, fenced.body)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
	add(runbookStep{name: "quarantined-healthz", command: "curl -s " + h.admin + "/healthz", output: fenced.body})

	// Stop the holder; its journal entry says how its holding ended.
	h.stop(t)
	add(runbookCLI(t, "history-after", 0, store, "leases", "history", "37"))
	add(runbookCLI(t, "unquarantine", 0, store, "leases", "release", "37"))

	// The clock step.
	c := startService(t, t.TempDir(), slices.Concat(store, holder, []string{"--machines", "38-38", "--test-clock-offset"})...)
	mintUntilReady(t, c, 1, 60*time.Second)
	stepClock(t, c, `{"step_ms":-3000}`)
	add(runbookStep{name: "clock-healthz", command: "curl -s " + c.url + "/healthz", output: call(t, "GET", c.url+"/healthz", "", "").body})
	m := call(t, "POST", c.url+"/v1/ids", "", "")
	if m.status != http.StatusServiceUnavailable {
		t.Fatalf("mint after a 3 s step back: %d %s, want 503", m.status, m.body)
	}
	add(runbookStep{name: "clock-mint", command: "curl -s -i -X POST " + c.url + "/v1/ids",
		output: fprint("HTTP/1.1 %d %s\nRetry-After: %s\n\n%s", m.status, http.StatusText(m.status), m.header.Get("Retry-After"), m.body)})
	mintUntilReady(t, c, 1, 10*time.Second) // recovers once the clock passes its last ID
	add(runbookStep{name: "clock-recovered", command: "curl -s " + c.url + "/healthz", output: call(t, "GET", c.url+"/healthz", "", "").body})
	c.stop(t)
	for i := range steps {
		if !strings.HasSuffix(steps[i].output, "\n") {
			steps[i].output += "\n"
		}
	}
	return steps
}

// writeExport writes ids as a CSV export with a header: id, created_at.
func writeExport(t *testing.T, path string, ids []snowfence.ID) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,created_at\n")
	for _, id := range ids {
		d, err := snowfence.Decode(id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d,%s\n", id, d.CreatedAt.UTC().Format(time.RFC3339Nano))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runbookDups is the detect step: dups over the two exports, asking the
// store who minted each duplicate. The command runs in dir, so the
// runbook shows the files' names only.
func runbookDups(t *testing.T, store []string, dir string) []runbookStep {
	t.Helper()
	s := runbookCLI(t, "dups", 1, store, "dups", "--column", "id", "--who",
		filepath.Join(dir, "orders.csv"), filepath.Join(dir, "orders-eu.csv"))
	s.output = strings.ReplaceAll(s.output, dir+"/", "")
	return []runbookStep{s}
}
