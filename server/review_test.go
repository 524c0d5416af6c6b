package server

import (
	"errors"
	"net/http"
	"testing"
)

// TestReviewSealHonoursQuotaRefusal: a caller the perimeter refuses — not
// listed in the callers file under "default": "deny", a connection whose
// certificate the reloaded CA bundle no longer trusts, or one whose caller
// a callers-file reload removed — gets 403 from every minting route, yet
// POST /v1/public-ids never asks the quota, so it still seals any ID under
// any type, 1000 per request at no cost. Sealing is the one capability
// that makes a public ID which Open accepts for an internal ID of the
// caller's choosing, so a refused caller keeps the power to forge.
func TestReviewSealHonoursQuotaRefusal(t *testing.T) {
	q := &fakeQuota{err: errors.New("perimeter: caller denied")}
	f := newFixture(t, nil, func(c *Config) { c.Quota = q })
	if r := f.post("/v1/uuids", ""); r.status != http.StatusForbidden {
		t.Fatalf("control: POST /v1/uuids by a refused caller: %d %s, want 403", r.status, r.body)
	}
	r := f.post("/v1/public-ids", `{"type":"user","ids":["1"]}`)
	if r.status != http.StatusForbidden {
		t.Errorf("POST /v1/public-ids by a caller the quota refuses: %d %s, want 403", r.status, r.body)
	}
}
