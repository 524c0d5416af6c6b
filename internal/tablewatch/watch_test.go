//go:build !snowfence_revert_tablerestore

// The signs themselves: built with snowfence_revert_tablerestore there are
// none, so these tests are not built then (rather than skipped).

package tablewatch

import (
	"testing"
	"time"
)

func held(epoch uint64, claim string, mark int64) Row {
	return Row{Exists: true, Epoch: epoch, Claim: claim, Holder: "h", MarkMs: mark}
}

// TestAfterJudgesAgainstBefore: an answer is judged against what was known
// when its request was sent, never against what a later answer brought:
// answers to requests in flight together arrive in any order.
func TestAfterJudgesAgainstBefore(t *testing.T) {
	var w Watch
	early := w.Before(0, 5, 5) // sent first, answered last
	late := w.Before(0, 5, 5)
	if what := w.After(late, map[int]Row{5: held(2, "b", 300)}, false); what != "" {
		t.Fatalf("first answer: %q", what)
	}
	if what := w.After(early, map[int]Row{5: held(1, "a", 100)}, false); what != "" {
		t.Fatalf("an older answer to an earlier request taken for a restore: %q", what)
	}
	if got := w.seen[Key{0, 5}]; got != held(2, "b", 300) {
		t.Errorf("kept %v, want the later row", got)
	}
	// A request sent now is judged against the later row.
	sp := w.Before(0, 5, 5)
	if what := w.After(sp, map[int]Row{5: held(1, "a", 100)}, false); what == "" || w.Gen() != 1 {
		t.Fatalf("epoch fell from 2 to 1 in an answer to a request sent after 2 was seen: %q, generation %d", what, w.Gen())
	}
}

// TestAfterScan: a scan (complete) finds a number seen before and now
// without a row; answers of a request sent before a notice are ignored.
func TestAfterScan(t *testing.T) {
	var w Watch
	w.After(w.Before(0, 0, 9), map[int]Row{3: held(1, "a", 100), 4: held(2, "b", 100)}, true)
	old := w.Before(0, 0, 9)
	// A row outside the span is not judged missing.
	if what := w.After(w.Before(0, 0, 3), map[int]Row{3: held(1, "a", 100)}, true); what != "" {
		t.Fatalf("scan of 0-3: %q", what)
	}
	sp := w.Before(0, 0, 9)
	if what := w.After(sp, map[int]Row{3: held(1, "a", 100)}, true); what == "" {
		t.Fatal("a scan without machine 4's row, seen before: no sign")
	}
	// The answer to old, sent before the notice, is of either history.
	if what := w.After(old, map[int]Row{3: held(0, "", 0)}, true); what != "" {
		t.Errorf("an answer to a request sent before the notice was judged: %q", what)
	}
	if len(w.seen) != 0 {
		t.Errorf("rows seen before the notice, or in an answer to a request sent before it, are kept: %v", w.seen)
	}
	// Other regions are other rows.
	w.After(w.Before(1, 4, 4), map[int]Row{4: held(9, "x", 1)}, false)
	if what := w.After(w.Before(0, 4, 4), map[int]Row{4: held(1, "y", 1)}, false); what != "" {
		t.Errorf("region 1's row judged with region 0's: %q", what)
	}
}

// TestNoticeAfter: a restore seen by a sign the rows do not carry (an
// earlier renewal value) notices as After does — a new generation, every
// lease claimed before fenced, the next claim floored — unless one was
// noticed since the request was sent.
func TestNoticeAfter(t *testing.T) {
	var w Watch
	_, gen := w.Floor(1000, time.Minute)
	w.Remember("a", gen)
	sp := w.Before(0, 5, 5)
	stale := w.Before(0, 6, 6)
	if !w.NoticeAfter(sp, "machine 5 holds an earlier renewal value") || w.Gen() != 1 {
		t.Fatalf("NoticeAfter started no generation (generation %d)", w.Gen())
	}
	if _, _, fenced := w.Restored("a"); !fenced {
		t.Error("a lease claimed before the notice is not fenced")
	}
	if floor, _ := w.Floor(2000, time.Minute); floor != 2000+time.Minute.Milliseconds() {
		t.Errorf("floor after the notice = %d, want the claimer's clock + the window", floor)
	}
	if w.NoticeAfter(stale, "machine 6 likewise") || w.Gen() != 1 {
		t.Errorf("a request sent before the notice started another generation (%d)", w.Gen())
	}
}
