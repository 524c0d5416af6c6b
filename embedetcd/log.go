package embedetcd

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a zap logger (what etcd logs to) that hands
// entries at or above level to lg. Once *quiet is set — the server is being
// closed — it drops everything below panic: etcd reports its own listeners
// closing as errors.
func newLogger(lg *slog.Logger, level zapcore.Level, quiet *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{lg: lg, level: level, quiet: quiet})
}

// slogCore is a zapcore.Core writing to a slog.Logger.
type slogCore struct {
	lg     *slog.Logger
	level  zapcore.Level
	quiet  *atomic.Bool
	fields []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.level }

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	d := *c
	d.fields = append(slices.Clip(c.fields), fs...)
	return &d
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	if c.quiet.Load() && e.Level < zapcore.DPanicLevel {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	level := e.Level
	if benign(e.Message, enc.Fields) {
		level = zapcore.DebugLevel
		if !c.Enabled(level) {
			return nil
		}
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys)+1)
	attrs = append(attrs, slog.String("component", "etcd"))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	c.lg.LogAttrs(context.Background(), slogLevel(level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

// benign reports errors etcd logs that need no one's attention, to be
// logged at debug level instead: a freshly started member whose storage
// version check runs before its first term is stored (it retries shortly).
func benign(msg string, fields map[string]any) bool {
	err, _ := fields["error"].(string)
	return msg == "failed to update storage version" && strings.Contains(err, "missing term information")
}

// slogLevel maps zap's levels onto slog's.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// zapLevel parses an Config.LogLevel.
func zapLevel(s string) (zapcore.Level, bool) {
	switch s {
	case "debug":
		return zapcore.DebugLevel, true
	case "info":
		return zapcore.InfoLevel, true
	case "warn":
		return zapcore.WarnLevel, true
	case "error":
		return zapcore.ErrorLevel, true
	}
	return 0, false
}
