package tablewatch

import (
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// A Row is one number's row (DynamoDB: item) as a read returned it or an
// acknowledged write left it.
type Row struct {
	// Exists is false for a number without a row; the other fields are
	// then zero.
	Exists bool
	// Epoch is lease_epoch, the token of the last claim.
	Epoch uint64
	// Claim is claim_nonce: the last claim attempt's nonce, kept by a
	// release and a quarantine.
	Claim string
	// Holder is "" when free and lease.QuarantineHolder when quarantined.
	Holder string
	// MarkMs is lease_expiry. A quarantined row's is not compared.
	MarkMs int64
}

func (r Row) held() bool { return r.Holder != "" && r.Holder != lease.QuarantineHolder }
func (r Row) free() bool { return r.Holder == "" }

func (r Row) String() string {
	switch {
	case !r.Exists:
		return "no row"
	case r.free():
		return fmt.Sprintf("free at epoch %d (claim %s) with mark %s", r.Epoch, r.Claim, lease.FormatMs(r.MarkMs))
	case !r.held():
		return fmt.Sprintf("quarantined at epoch %d", r.Epoch)
	}
	return fmt.Sprintf("held by %q at epoch %d (claim %s) with mark %s", r.Holder, r.Epoch, r.Claim, lease.FormatMs(r.MarkMs))
}

// WentBack describes the sign, in now, that machine's row went back in
// time since it was seen as before — the row read before the request that
// returned now was sent — or returns "" if there is none (see the package
// documentation for the signs and for what is not one).
func WentBack(machine int, before, now Row) string {
	seen := func(why string) string {
		return fmt.Sprintf("machine %d was seen %s, and is now %s: %s", machine, before, now, why)
	}
	switch {
	case !before.Exists:
		return "" // nothing to compare: a row appears with epoch 0 or more
	case !now.Exists:
		return seen("no write deletes a row")
	case now.Epoch < before.Epoch:
		return seen("its epoch fell, and epochs only grow")
	case now.Epoch > before.Epoch:
		return "" // another claim, a quarantine, raise-marks (or a rollback and as many claims: not told apart)
	case now.Claim != before.Claim:
		return seen("one epoch under two claims, and each claim writes a new epoch")
	case before.held() && now.held() && now.MarkMs < before.MarkMs:
		return seen("a held row's mark only grows")
	case before.free() && now.free() && now.MarkMs < before.MarkMs:
		return seen("a free row's mark only grows")
	case before.free() && now.held():
		return seen("a released claim is never held again")
	}
	return ""
}
