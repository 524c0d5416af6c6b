package pgstore

import "github.com/snowfence/snowfence/internal/revert"

// sameOrigin is the SQL of the origin row when the server is still on the
// cluster (system identifier) and timeline it records: claims and
// extensions run only then, so a server restored from a copy, which
// forgot the claims since, fences every holder of it. Its floor_ms is the
// restore floor: after a restore was noticed, the floor the noticing claim
// recorded, and at least win (the claim's own restore window) after the
// noticing claimer's clock; and at least own, the floor of a restore the
// store noticed in the rows (signs.go). // Load-bearing for uniqueness: change only with scripts/prove-search restore.
func sameOrigin(win, own string) string {
	if !revert.Restore {
		return `SELECT GREATEST(CASE WHEN o.restores > 0 THEN GREATEST(o.floor_ms, o.noticed_ms + ` + win + `) ELSE o.floor_ms END, ` + own + `) AS floor_ms
	  FROM {o} o JOIN ident ON o.system_identifier = ident.sysid AND o.timeline = ident.tl WHERE o.id = 1`
	}
	return `SELECT GREATEST(0 * ` + win + `, ` + own + `) AS floor_ms`
}
