package k8sstore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// entries are n journal entries of holders named holder-like strings of
// length holderLen, tokens 1..n, with full-size fields.
func entries(n, holderLen int) []entry {
	es := make([]entry, n)
	for i := range es {
		h := strings.Repeat("h", holderLen)
		es[i] = entry{Token: uint64(i + 1), Claim: strings.Repeat("c", 32), Holder: h, ClaimedMs: 1_800_000_000_000,
			PrevMarkMs: 1_800_000_000_000, StartMs: 1_800_000_000_000, End: lease.EndReleased, EndMs: 1_800_000_000_000, EndedMs: 1_800_000_000_000}
	}
	return es
}

// TestJournalBound: the journal annotation keeps the newest
// lease.JournalRetention entries, oldest first, and at most
// maxJournalBytes (the newest always), whatever the holder names: far
// below the API server's 256 KiB on an object's annotations.
func TestJournalBound(t *testing.T) {
	for _, c := range []struct {
		name                string
		n, holderLen        int
		wantKept, wantAtMax int // entries kept; bytes at most
	}{
		{"45-character holders", lease.JournalRetention + 6, 45, lease.JournalRetention, 17 << 10},
		{"a few", 3, 45, 3, 1 << 10},
		{"4 KiB holders", lease.JournalRetention, 4 << 10, 15, maxJournalBytes},
		{"one holder over the bound", 2, 100 << 10, 1, 101 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			es := entries(c.n, c.holderLen)
			raw := encodeJournal(es)
			got, err := parseJournal(raw)
			if err != nil {
				t.Fatalf("parseJournal(encodeJournal) = %v", err)
			}
			if len(got) != c.wantKept {
				t.Errorf("%d entries kept of %d, want %d", len(got), c.n, c.wantKept)
			}
			if len(raw) > c.wantAtMax {
				t.Errorf("journal annotation is %d bytes, want at most %d", len(raw), c.wantAtMax)
			}
			for i, e := range got {
				if want := es[c.n-len(got)+i]; e != want {
					t.Fatalf("entry %d = token %d, want token %d (the newest, oldest first)", i, e.Token, want.Token)
				}
			}
			t.Logf("%d entries, %d bytes (%d per entry)", len(got), len(raw), len(raw)/max(len(got), 1))
		})
	}
}

// TestEndOps: a write ends the newest entry only when it is the record's
// claim (epoch and nonce) and not ended yet.
func TestEndOps(t *testing.T) {
	s := newStore(nil, mustDefaults(t, Config{Namespace: "ns"}))
	held := entry{Token: 4, Claim: "c4", Holder: "a", StartMs: 100}
	journal := encodeJournal([]entry{{Token: 3, Claim: "c3", Holder: "b", End: lease.EndReleased, EndMs: 90}, held})
	o := object{exists: true, rec: record{Holder: "a", Epoch: 4, MarkMs: 500, Claim: "c4"}, journal: journal}
	for _, c := range []struct {
		name string
		o    object
		end  bool
	}{
		{"the holding", o, true},
		{"another claim under the epoch", func() object { x := o; x.rec.Claim = "other"; return x }(), false},
		{"a record newer than the journal", func() object { x := o; x.rec.Epoch = 5; return x }(), false},
		{"already ended", func() object {
			x := o
			x.journal = encodeJournal([]entry{{Token: 4, Claim: "c4", End: lease.EndReleased, EndMs: 400}})
			return x
		}(), false},
		{"no journal", func() object { x := o; x.journal = ""; return x }(), false},
		{"not a journal", func() object { x := o; x.journal = "{"; return x }(), false},
	} {
		ops := s.endOps(1, c.o, lease.EndQuarantined, 500, 600)
		if got := len(ops) == 1; got != c.end {
			t.Errorf("%s: %d operations, want an end: %v", c.name, len(ops), c.end)
			continue
		}
		if !c.end {
			continue
		}
		if ops[0].Op != "add" || ops[0].Path != "/metadata/annotations/snowfence.io~1journal" {
			t.Errorf("%s: operation %s %s, want add of the journal annotation", c.name, ops[0].Op, ops[0].Path)
		}
		var es []entry
		if err := json.Unmarshal([]byte(ops[0].Value.(string)), &es); err != nil || len(es) != 2 {
			t.Fatalf("%s: journal written %v (%v), want two entries", c.name, ops[0].Value, err)
		}
		want := held
		want.End, want.EndMs, want.EndedMs = lease.EndQuarantined, 500, 600
		if es[1] != want || es[0].End != lease.EndReleased {
			t.Errorf("%s: journal written %+v, want the newest ended %+v and the older as it was", c.name, es, want)
		}
	}
}

func mustDefaults(t *testing.T, cfg Config) Config {
	t.Helper()
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
