package server

import (
	"net/http"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// statusJSON is the body of GET /v1/status, what the status page polls:
// this holder's state, the fleet as the lease store sees it, and the
// layouts of the schedule, for the page's bit picture.
type statusJSON struct {
	// NowMs is the server's wall clock when the answer was made (Unix ms):
	// the zero of every "until" and the time base of the IDs-per-second
	// rate the page derives from Holder.Issued.
	NowMs   int64          `json:"now_ms"`
	Holder  holderStatus   `json:"holder"`
	Fleet   *fleetStatus   `json:"fleet"`
	Layouts []layoutStatus `json:"layouts"`
}

// holderStatus is this holder's state.
type holderStatus struct {
	// Status is "ok", "refusing", "shutting_down" or "starting", as in
	// the health.
	Status  string `json:"status"`
	Issuing bool   `json:"issuing"`
	// Reason and Detail say why not, when not issuing.
	Reason   string   `json:"reason,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Machine is -1 while no number is held.
	Machine    int    `json:"machine"`
	Region     int    `json:"region"`
	RegionName string `json:"region_name,omitempty"`
	Layout     string `json:"layout,omitempty"`
	// Holder, LeaseState, Token, MarkMs, Claims, Losses, RenewFailures and
	// LastError are the lease keeper's (Config.Lease); absent without one.
	Holder        string `json:"holder,omitempty"`
	LeaseState    string `json:"lease_state,omitempty"`
	Token         uint64 `json:"token,omitempty"`
	MarkMs        int64  `json:"mark_ms,omitempty"`
	Claims        uint64 `json:"claims,omitempty"`
	Losses        uint64 `json:"losses,omitempty"`
	RenewFailures uint64 `json:"renew_failures,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	// UntilFenceMs is the wall time left before the lease's mark at
	// NowMs; absent with no fence, and before the lease starts.
	UntilFenceMs *int64 `json:"until_fence_ms,omitempty"`
	// UntilStartMs is the time left before a lease not yet started may
	// issue (a claim's notice window); absent otherwise.
	UntilStartMs *int64       `json:"until_start_ms,omitempty"`
	Clock        *clockStatus `json:"clock,omitempty"`
	// Issued counts the IDs the generator issued since it started.
	Issued uint64 `json:"issued"`
}

// clockStatus is snowfence.ClockStatus in milliseconds.
type clockStatus struct {
	Synchronized     bool    `json:"synchronized"`
	EstimatedErrorMs float64 `json:"estimated_error_ms"`
	MaxErrorMs       float64 `json:"max_error_ms"`
	OffsetMs         float64 `json:"offset_ms"`
	// Leap is the kernel's leap-second state (snowfence.LeapState):
	// insert, delete, in-progress or done; absent when none is announced.
	Leap string `json:"leap,omitempty"`
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// layoutStatus is one step of the schedule: the layout and when it takes
// over.
type layoutStatus struct {
	Name string `json:"name"`
	// FromMs is the first instant of the step (Unix ms); 0 for the first
	// step, which applies from the epoch on.
	FromMs       int64 `json:"from_ms"`
	EpochMs      int64 `json:"epoch_ms"`
	UnitMs       int64 `json:"unit_ms"`
	TimeBits     int   `json:"time_bits"`
	RegionBits   int   `json:"region_bits"`
	MachineBits  int   `json:"machine_bits"`
	SequenceBits int   `json:"sequence_bits"`
}

// layoutsOf lists the schedule's steps.
func layoutsOf(sch snowfence.Schedule) []layoutStatus {
	steps := sch.Steps()
	out := make([]layoutStatus, 0, len(steps))
	for _, st := range steps {
		l := st.Layout
		unit := l.Unit
		if unit == 0 {
			unit = time.Millisecond
		}
		ls := layoutStatus{Name: l.Name, EpochMs: l.Epoch.UnixMilli(), UnitMs: unit.Milliseconds(),
			TimeBits: l.TimeBits, RegionBits: l.RegionBits, MachineBits: l.MachineBits, SequenceBits: l.SequenceBits}
		if !st.From.IsZero() {
			ls.FromMs = st.From.UnixMilli()
		}
		out = append(out, ls)
	}
	return out
}

// withLease adds the lease keeper's facts to h.
func (h *holderStatus) withLease(ls lease.Status) {
	h.Holder, h.LeaseState, h.Token, h.MarkMs = ls.Holder, string(ls.State), ls.Token, ls.MarkMs
	h.Claims, h.Losses, h.RenewFailures, h.LastError = ls.Claims, ls.Losses, ls.RenewFailures, ls.LastError
}

// status answers GET /v1/status with this holder's state, the fleet and
// the schedule's layouts.
func (s *Server) status(w http.ResponseWriter, r *http.Request, _ string) int {
	if reason, detail, ok := s.startingNow(); ok {
		return s.statusStarting(w, r, reason, detail)
	}
	health, _ := s.check()
	h := holderStatus{
		Status: health.Status, Issuing: health.Issuing, Reason: health.Reason, Detail: health.Detail,
		Warnings: health.Warnings, Machine: health.Machine, Region: health.Region, Layout: health.Layout,
		UntilFenceMs: health.UntilFenceMs, UntilStartMs: health.UntilStartMs, Issued: s.gen.Stats().Issued,
	}
	if c := health.Clock; c != nil {
		h.Clock = &clockStatus{Synchronized: c.Synchronized, EstimatedErrorMs: msOf(c.EstimatedError), MaxErrorMs: msOf(c.MaxError), OffsetMs: msOf(c.Offset), Leap: string(c.Leap)}
	}
	if health.Lease != nil {
		h.withLease(*health.Lease)
	}
	if s.names != nil && h.Region >= 0 {
		h.RegionName = regionName(s.names, h.Region)
	}
	return s.writeJSON(w, &statusJSON{
		NowMs:   s.clock.Now().WallMs,
		Holder:  h,
		Fleet:   s.fleet.read(r.Context(), s.names),
		Layouts: layoutsOf(s.schedule),
	})
}
