package perimeter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// TestSealOracle reproduces the attack of issue 28 on a server behind the
// perimeter, over mutual TLS. Sealing is deterministic, so a caller that
// may seal IDs of its choosing holds an oracle: it seals a guess and
// compares. The attacker (billing) may mint, not open. It mints one sealed
// ID of its own, which gives it the machine and the time; the victim
// service (orders) then mints a few, and the attacker is shown one of
// their public IDs (say, in a URL). It searches the window — ticks from
// its own on, the sequences of each — sealing candidates 1000 a request
// until one matches.
//
// Without "seal_public_ids" the first request of the search is a 403 that
// names the permission, and the search cannot run: that is the rule. With
// it (granted by a reload of the callers file) the search finds the
// victim's internal ID: that is what the permission gives, documented in
// docs/public-ids.md, not prevented. Mint-and-seal, which the attacker may
// use, gives it nothing to search with.
func TestSealOracle(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))
	r := newRig(t, `{"default": "deny", "callers": {
		"spiffe://corp/orders": {"rate": 1000000, "burst": 100000},
		"billing.corp": {"rate": 1000000, "burst": 100000}}}`, func(c *snowfence.Config) { c.Clock = clk })
	attacker, victim := r.client(r.caller(billing), nil), r.client(r.caller(orders), nil)
	mint := func(c *http.Client, n int) (ids, pids []string) {
		t.Helper()
		resp, body, err := r.send(c, http.MethodPost, "/v1/public-ids:mint", fmt.Sprintf(`{"type":"order","count":%d}`, n))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("mint and seal: %v %v %s", resp, err, body)
		}
		var m struct {
			IDs       []string `json:"ids"`
			PublicIDs []string `json:"public_ids"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.IDs) != n || len(m.PublicIDs) != n {
			t.Fatalf("mint and seal: %s (%v)", body, err)
		}
		return m.IDs, m.PublicIDs
	}

	own, _ := mint(attacker, 1)
	clk.Advance(3 * time.Millisecond)
	vIDs, vPIDs := mint(victim, 5)
	target, secret := vPIDs[2], vIDs[2]

	// What the attacker knows: its own ID's machine and tick.
	layout := snowfence.V1()
	f := layout.Split(snowfence.MustParseID(own[0]))
	const ticks, seqs = 8, 250 // the window: 8 ms from its own ID, 250 sequences each
	search := func() (found string, tried, requests int, refusal *http.Response, refusalBody string) {
		var batch []string
		flush := func() bool {
			body, _ := json.Marshal(map[string]any{"type": "order", "ids": batch})
			resp, got, err := r.send(attacker, http.MethodPost, "/v1/public-ids", string(body))
			if err != nil {
				t.Fatal(err)
			}
			requests++
			if resp.StatusCode != http.StatusOK {
				refusal, refusalBody = resp, got
				return false
			}
			var sealed struct {
				PublicIDs []string `json:"public_ids"`
			}
			if err := json.Unmarshal([]byte(got), &sealed); err != nil || len(sealed.PublicIDs) != len(batch) {
				t.Fatalf("seal: %s (%v)", got, err)
			}
			for i, pid := range sealed.PublicIDs {
				tried++
				if pid == target {
					found = batch[i]
					return false
				}
			}
			batch = batch[:0]
			return true
		}
		for tick := f.Tick; tick < f.Tick+ticks; tick++ {
			for seq := range seqs {
				id, err := layout.Compose(tick, f.Region, f.Machine, seq)
				if err != nil {
					t.Fatal(err)
				}
				if batch = append(batch, id.String()); len(batch) == snowfence.MaxBatch && !flush() {
					return
				}
			}
		}
		if len(batch) > 0 {
			flush()
		}
		return
	}

	// Not allowed to seal: the first request is refused, nothing is
	// learnt, and opening is refused too.
	found, tried, requests, refusal, body := search()
	if found != "" || refusal == nil || refusal.StatusCode != http.StatusForbidden || requests != 1 || tried != 0 {
		t.Fatalf("without seal_public_ids the search found %q after %d candidates in %d requests (refusal %v); want a 403 on the first", found, tried, requests, refusal)
	}
	if !strings.Contains(body, `\"seal_public_ids\": true`) || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, "/v1/public-ids:mint") {
		t.Errorf("refusal %s: want code forbidden naming \"seal_public_ids\": true and POST /v1/public-ids:mint", body)
	}
	if resp, got, err := r.send(attacker, http.MethodGet, "/v1/public-ids/"+target, ""); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("open by the attacker: %v %v %s; want 403", resp, err, got)
	}

	// Granted: the oracle works, as documented.
	if err := r.writeCallers(`{"default": "deny", "callers": {
		"spiffe://corp/orders": {"rate": 1000000, "burst": 100000},
		"billing.corp": {"rate": 1000000, "burst": 100000, "seal_public_ids": true}}}`); err != nil {
		t.Fatal(err)
	}
	found, tried, requests, refusal, body = search()
	if refusal != nil {
		t.Fatalf("with seal_public_ids: refused %d %s", refusal.StatusCode, body)
	}
	if found != secret {
		t.Fatalf("with seal_public_ids the search over %d×%d candidates found %q, want the victim's %s", ticks, seqs, found, secret)
	}
	t.Logf("with seal_public_ids: %s opened by search, %d candidates in %d requests", target, tried, requests)
}
