package explore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// keeperLog is a slog.Handler that puts a keeper's warnings and errors
// (failed claims and renewals, losses) into the world's action log, at the
// step the world is at, so a failure's log shows what the keepers saw.
type keeperLog struct {
	log    *actionLog
	step   *atomic.Int64
	holder int
	attrs  []slog.Attr
	// lastErr keeps the error of the last warning, so a start that gave up
	// can say why its claims failed.
	lastErr *atomic.Pointer[string]
}

func (h *keeperLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

func (h *keeperLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "  holder %d keeper: %s", h.holder, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.String()
		if a.Key == "error" && h.lastErr != nil && !strings.Contains(v, "context canceled") {
			h.lastErr.Store(&v)
		}
		if len(v) > 160 {
			v = v[:160] + "…"
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, v)
		return true
	})
	h.log.add(int(h.step.Load()), "%s", b.String())
	return nil
}

func (h *keeperLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *keeperLog) WithGroup(string) slog.Handler { return h }
