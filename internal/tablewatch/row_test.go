package tablewatch

import (
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// TestWentBack: each sign, and each change ordinary operation makes that
// must not be one.
func TestWentBack(t *testing.T) {
	held := func(epoch uint64, claim string, mark int64) Row {
		return Row{Exists: true, Epoch: epoch, Claim: claim, Holder: "h", MarkMs: mark}
	}
	free := func(epoch uint64, claim string, mark int64) Row {
		return Row{Exists: true, Epoch: epoch, Claim: claim, MarkMs: mark}
	}
	quar := func(epoch uint64, claim string) Row {
		return Row{Exists: true, Epoch: epoch, Claim: claim, Holder: lease.QuarantineHolder, MarkMs: lease.QuarantineExpiryMs}
	}
	for _, c := range []struct {
		name        string
		before, now Row
		sign        bool
	}{
		// Signs.
		{"row gone", held(3, "a", 100), Row{}, true},
		{"raise-marks' row gone", free(0, "", 100), Row{}, true},
		{"epoch fell", held(3, "a", 100), held(2, "z", 900), true},
		{"epoch fell to a quarantine", held(3, "a", 100), quar(2, "z"), true},
		{"epoch repeated under another claim", held(3, "a", 100), held(3, "b", 900), true},
		{"free epoch under another claim", free(3, "a", 100), held(3, "b", 900), true},
		{"held mark fell", held(3, "a", 100), held(3, "a", 99), true},
		{"free mark fell", free(3, "a", 100), free(3, "a", 99), true},
		{"release undone", free(3, "a", 100), held(3, "a", 100), true},
		// Ordinary operation.
		{"first look", Row{}, held(3, "a", 100), false},
		{"renewal", held(3, "a", 100), held(3, "a", 200), false},
		{"same", held(3, "a", 100), held(3, "a", 100), false},
		{"release below the reservation", held(3, "a", 100), free(3, "a", 50), false},
		{"claimed by another", held(3, "a", 100), held(4, "b", 50), false},
		{"claimed by another after expiry, free", free(3, "a", 100), held(4, "b", 150), false},
		{"quarantine", held(3, "a", 100), quar(4, "a"), false},
		{"unquarantine", quar(4, "a"), free(4, "a", 100), false},
		{"raise-marks fences", held(3, "a", 100), free(4, fencedByRaise, 100), false},
		{"raise-marks raises a free row", free(3, "a", 100), free(3, "a", 500), false},
		{"raise-marks makes a row", Row{}, free(0, "", 500), false},
	} {
		got := WentBack(7, c.before, c.now)
		if (got != "") != c.sign {
			t.Errorf("%s: %v then %v: WentBack = %q, want a sign: %v", c.name, c.before, c.now, got, c.sign)
		}
	}
}

const fencedByRaise = "fenced by raise-marks"
