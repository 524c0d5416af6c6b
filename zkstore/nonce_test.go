package zkstore_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/zkstore"
)

// TestClaimAdoptsOnlyItsOwnNonce: a claim whose write is lost unsent (an
// error of unknown outcome) while another claimer under the same holder
// name claims the same number — a holder string two processes share —
// re-reads a record with its holder and the epoch it meant to write, but
// another claim's nonce: it must not adopt it. Adopted, two processes
// would issue on one machine number under one epoch.
func TestClaimAdoptsOnlyItsOwnNonce(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	other := open(t, e, path)
	nowMs := time.Now().UnixMilli()
	var theirs struct {
		machine int
		token   uint64
		claim   string
	}
	st, err := zkstore.NewDropping(dial(t, e), zkstore.Config{Path: path}, func() {
		l, err := other.Claim(t.Context(), req("shared", 0, 0, nowMs))
		if err != nil {
			t.Errorf("the other process's claim between the claim's read and its write: %v", err)
			return
		}
		theirs.machine, theirs.token, theirs.claim = l.Machine, l.Token, l.Claim
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l, err := st.Claim(t.Context(), req("shared", 0, 0, nowMs))
	if err == nil {
		t.Fatalf("DUPLICATE HOLDER: a claim whose write was lost unsent adopted another process's claim of machine %d epoch %d "+
			"(the other process's nonce %s, this attempt's %s): both issue on one number under one epoch; want an error", l.Machine, l.Token, theirs.claim, l.Claim)
	}
	t.Logf("claim of unknown outcome refused: %v", err)
}
