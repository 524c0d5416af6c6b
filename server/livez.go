package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Liveness: GET /livez, for an orchestrator's liveness probe, which
// restarts the process when it fails. /healthz and /readyz answer 503
// through every refusal that clears on its own — a store outage, a clock
// step or a clock not yet in sync, a fenced wait, a spare waiting for a
// number, the start's notice window, the drain — and a restart would not
// help with any of them (a restarted holder waits out a claim's notice
// window before it issues again). /livez answers 200 through all of those:
// it fails only when the process is wedged, which a restart does cure.

// ReasonStalled is the reason of /livez's 503 (code "unavailable"): the
// lease keeper's loop has not come round for longer than it ever takes
// while it runs (lease.Keeper.Stalled), so it renews nothing again.
const ReasonStalled = "stalled"

// StallReporter is what /livez asks of Config.Lease when Config.Lease has
// it (*lease.Keeper does): how long ago the keeper's loop last came round,
// and whether that means it is wedged.
type StallReporter interface {
	Stalled() (since time.Duration, stalled bool)
}

var _ StallReporter = (*lease.Keeper)(nil)

// livezJSON is the body of /livez's 200.
type livezJSON struct {
	Alive bool `json:"alive"`
}

// livez answers GET /livez: 200 {"alive":true} while the process serves
// and the lease keeper's loop, if Config.Lease reports on it
// (StallReporter), comes round; 503 unavailable, reason stalled, once it
// has not for longer than it may. A draining server answers 200: its
// keeper is stopping on purpose, and the drain has its own deadline.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request, _ string) int {
	if sr, ok := s.lease.(StallReporter); ok && !s.draining.Load() {
		if since, stalled := sr.Stalled(); stalled {
			return s.writeError(w, &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable, reason: ReasonStalled,
				message: fmt.Sprintf("wedged: the lease keeper's loop has not come round for %s, longer than it ever takes while it runs; it renews nothing "+
					"again (the generator has fenced itself, so no ID repeats): restart the process", since.Round(time.Millisecond))})
		}
	}
	return s.writeJSON(w, livezJSON{Alive: true})
}
