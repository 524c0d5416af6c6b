package oracle

import (
	"fmt"
	"regexp"
)

// Defaults for the zero fields of Config.
const (
	// DefaultTable is the table name used when Config.Table is empty.
	DefaultTable = "chaos_ids"
	// DefaultBatch is the COPY batch size used when Config.Batch is zero:
	// batches of 50,000 to 200,000 rows COPY equally fast within the noise
	// of BenchmarkCopy (10,000 is slower), and the smallest of them keeps
	// the slow path's redo short.
	DefaultBatch = 50_000
	// DefaultMaxQueued is the backpressure bound used when Config.MaxQueued
	// is zero: about 48 MB of IDs and sources.
	DefaultMaxQueued = 4_000_000
)

// tableName is what Config.Table may be: a plain lower-case identifier, so
// the name needs no quoting in messages and cannot surprise anyone in psql.
var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Config configures an Oracle. The zero value of every field but URL means
// its default.
type Config struct {
	// URL is the PostgreSQL connection URL, e.g.
	// postgres://postgres@127.0.0.1:5432/snowfence?sslmode=disable.
	URL string
	// Table names the table Open drops and re-creates; zero means
	// DefaultTable. Lower-case letters, digits and '_', at most 63.
	Table string
	// Batch is the number of IDs per COPY; zero means DefaultBatch.
	Batch int
	// MaxQueued bounds the IDs accepted by Add and not yet written (Add
	// blocks at the bound); zero means DefaultMaxQueued. It must be at least
	// two batches, so one batch can fill while another is written.
	MaxQueued int
	// Keep leaves the table in place after a successful Close, for
	// inspection; by default Close drops it. A failed Close always leaves it.
	Keep bool
}

// withDefaults returns cfg with its zero fields set, or an error wrapping
// ErrConfig naming the first bad field.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.URL == "" {
		return cfg, fmt.Errorf("%w: URL is empty", ErrConfig)
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if !tableName.MatchString(cfg.Table) {
		return cfg, fmt.Errorf("%w: Table %q is not a lower-case identifier of at most 63 characters", ErrConfig, cfg.Table)
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Batch < 0 {
		return cfg, fmt.Errorf("%w: Batch %d is negative", ErrConfig, cfg.Batch)
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = max(DefaultMaxQueued, 2*cfg.Batch)
	}
	if cfg.MaxQueued < 2*cfg.Batch {
		return cfg, fmt.Errorf("%w: MaxQueued %d is less than two batches of %d", ErrConfig, cfg.MaxQueued, cfg.Batch)
	}
	return cfg, nil
}
