package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// The kernel's leap-second state shows in /healthz (clock.leap and a
// warning), in /v1/status (holder.clock.leap) and in
// snowfence_clock_leap_pending; a holder announced a leap second still
// issues (it refuses only when the kernel steps).
func TestLeapSecondStateShown(t *testing.T) {
	for _, c := range []struct {
		leap   snowfence.LeapState
		metric string
	}{
		{snowfence.LeapInsert, "snowfence_clock_leap_pending 1"},
		{snowfence.LeapDelete, "snowfence_clock_leap_pending -1"},
		{snowfence.LeapNone, "snowfence_clock_leap_pending 0"},
	} {
		f := newFixture(t, func(g *snowfence.Config) {
			g.ClockPolicy, g.ClockStatus = "", func() (snowfence.ClockStatus, error) {
				return snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond, Leap: c.leap}, nil
			}
		}, nil)
		r := f.do(req{target: "/healthz"})
		if r.status != http.StatusOK {
			t.Fatalf("%q: /healthz %d %s; want 200", c.leap, r.status, r.body)
		}
		var h struct {
			Warnings []string
			Clock    struct{ Leap string }
		}
		if err := json.Unmarshal([]byte(r.body), &h); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(h.Warnings, ";"), "leap second")
		if h.Clock.Leap != string(c.leap) || warned != c.leap.Pending() {
			t.Errorf("%q: /healthz clock.leap %q, leap warning %v: %s", c.leap, h.Clock.Leap, warned, r.body)
		}
		if st := statusOf(t, f.h); st.Holder.Clock == nil || st.Holder.Clock.Leap != string(c.leap) {
			t.Errorf("%q: /v1/status holder.clock %+v", c.leap, st.Holder.Clock)
		}
		if m := f.do(req{target: "/metrics"}); !strings.Contains(m.body, "\n"+c.metric+"\n") {
			t.Errorf("%q: /metrics lacks %q", c.leap, c.metric)
		}
	}
}
