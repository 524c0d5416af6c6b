package embedetcd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/snowfence/snowfence/lease"
)

// HighWaterSuffix names a data directory's high-water file by default: the
// directory's path with it added, beside the directory (for
// ./snowfence-data, ./snowfence-data.highwater).
const HighWaterSuffix = ".highwater"

// The high-water file. The embedded etcd lives on the holders' own host,
// so it is restored with it: a data directory copied back from a backup, a
// VM restored with its disk. Its holders claim in the process that starts
// it, so there is no moment to raise its marks first (docs/runbook.md), and
// a restarted process remembers none: with the host's clock behind the last
// ID issued, its claim would start below it. The high-water file keeps,
// outside the directory, the highest mark the holders reserved
// (lease.KeeperConfig.HighWater), and every later claim starts above it.
//
// A missing file means nothing when the data directory is new. Once the
// directory holds etcd data it means the directory was restored or copied
// without its file, or made before snowfence kept one; the keeper is then
// refused, and so is a corrupt file, until the operator sets the mark with
// Config.HighWaterAt (serve --high-water-at).

// highWater is the data directory's high-water file, whose refusals say
// what to do.
type highWater struct {
	lease.HighWaterFile
	dir string
}

// Load implements lease.HighWater, naming the fix in its refusals.
func (h highWater) Load() (int64, error) {
	ms, err := h.HighWaterFile.Load()
	switch {
	case err == nil:
		return ms, nil
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("%w. The data directory %s holds etcd data, but its high-water file is missing: the directory was restored or "+
			"copied without it, or made by a snowfence that kept none. Start once with the high-water mark set at or after the last ID issued "+
			"from this directory (serve --high-water-at, embedetcd.Config.HighWaterAt): now, if this host's clock is not behind it", err, h.dir)
	}
	return 0, fmt.Errorf("%w. It keeps this directory's holders above every ID issued before a restore of the directory; if you know the "+
		"last ID issued from it, start once with the high-water mark set at or after it (serve --high-water-at, "+
		"embedetcd.Config.HighWaterAt): now, if this host's clock is not behind it", err)
}

// prepareHighWater resolves cfg's high-water file, notes whether the data
// directory is new (no etcd data in it yet), and applies HighWaterAt. It
// runs before etcd starts.
func prepareHighWater(cfg Config) (highWater, error) {
	path := cfg.HighWaterFile
	if path == "" {
		path = filepath.Clean(cfg.Dir) + HighWaterSuffix
	}
	_, err := os.Stat(filepath.Join(cfg.Dir, "member"))
	fresh := errors.Is(err, fs.ErrNotExist)
	f := lease.NewHighWaterFile(path, fresh)
	if !cfg.HighWaterAt.IsZero() {
		at := cfg.HighWaterAt.UnixMilli()
		if ms, err := lease.NewHighWaterFile(path, true).Load(); err == nil {
			at = max(at, ms) // raise it, never lower it
		}
		if err := f.Store(at); err != nil {
			return highWater{}, fmt.Errorf("embedetcd: setting the high-water mark to %s: %w", lease.FormatMs(at), err)
		}
	}
	return highWater{HighWaterFile: f, dir: cfg.Dir}, nil
}

// HighWater returns the high-water mark of the holders of this data
// directory, kept in Config.HighWaterFile (beside the directory by
// default), for lease.KeeperConfig.HighWater: node.EmbeddedEtcd and
// OnEmbedded give it to the Node's keeper. A missing file is no mark while
// the directory was new when Start ran and a refusal once it held etcd
// data; a corrupt one is refused. One keeper at a time may use it.
func (e *Server) HighWater() lease.HighWater { return e.hw }
