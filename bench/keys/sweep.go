package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A sweepPoint is one fleet pattern's effect on one key type's index.
type sweepPoint struct {
	Kind        string  `json:"kind"`
	Label       string  `json:"label"`
	Burst       int     `json:"burst"`
	RoundsPerMs int     `json:"rounds_per_ms"`
	IDsPerMs    int     `json:"ids_per_ms"`
	Rows        int64   `json:"rows"`
	IndexBytes  int64   `json:"index_bytes"`
	LeafDensity float64 `json:"avg_leaf_density"`
	WALBytes    int64   `json:"wal_bytes"`
}

// sweepBursts are the fleet patterns of the sweep: bursts per turn with the
// turns per millisecond; the first is the fleet in strict key order (one
// ID per machine per millisecond, machines in number order).
var sweepBursts = []struct{ burst, rounds int }{{1, 1}, {1, 4}, {2, 4}, {4, 4}, {8, 4}, {16, 4}}

// sweep loads the fleet-minted key types (snowfence BIGINT and UUIDv8) with
// each fleet pattern of sweepBursts and measures their key index: how far
// the interleaving of many generators' IDs can go before the index fills
// like one of random keys.
func sweep(ctx context.Context, conn *pgx.Conn, machines int, rc runConfig) ([]sweepPoint, error) {
	var out []sweepPoint
	rc.lookups = 0
	for _, b := range sweepBursts {
		fc := fleetConfig{machines: machines, burst: b.burst, roundsPerMs: b.rounds}
		for _, k := range []kind{snowfenceKind(fc), uuidV8Kind(fc)} {
			fmt.Fprintf(rc.progress, "keys: sweep %s, burst %d, %d turns per ms: %d rows\n", k.name, b.burst, b.rounds, rc.rows)
			res, err := measure(ctx, conn, k, rc)
			if err != nil {
				return out, err
			}
			ix := res.keyIndex()
			out = append(out, sweepPoint{
				Kind: k.name, Label: k.label, Burst: b.burst, RoundsPerMs: b.rounds,
				IDsPerMs: machines * b.burst * b.rounds, Rows: rc.rows,
				IndexBytes: ix.Bytes, LeafDensity: ix.LeafDensity, WALBytes: res.WALBytes,
			})
		}
	}
	return out, nil
}
