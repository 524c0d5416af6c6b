package main

import (
	"context"
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// fleetConfig says how the fleet of generators mints: machines generators
// on machine numbers 0 to machines-1 take turns minting burst IDs each,
// and the shared clock moves on one millisecond after roundsPerMs turns of
// the whole fleet.
type fleetConfig struct {
	machines, burst, roundsPerMs int
}

// fleetStart is the fake clock's first instant, so every run mints the same
// IDs.
var fleetStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// A fleet mints snowfence IDs as rows from several services reach one
// database: each generator's IDs increase, and the generators' bursts
// interleave, so the insert order follows time but, within a millisecond,
// jumps between the machines' ranges. The clock is a fake one moved by the
// fleet itself, so the ID sequence is the same every run and does not
// depend on how fast the database takes it.
type fleet struct {
	cfg   fleetConfig
	clk   *fakeclock.Clock
	gens  []*snowfence.Generator
	buf   []snowfence.ID
	pos   int
	turn  int // the generator that mints the next burst
	round int // turns of the whole fleet in the current millisecond
}

func newFleet(cfg fleetConfig) (*fleet, error) {
	if cfg.machines < 1 || cfg.burst < 1 || cfg.roundsPerMs < 1 {
		return nil, fmt.Errorf("fleet: machines, burst and rounds per ms must be at least 1 (got %+v)", cfg)
	}
	// A v1 millisecond holds 4,096 IDs per machine; more would make a
	// generator wait for the fake clock, which only the fleet moves.
	if cfg.burst*cfg.roundsPerMs > 4096 {
		return nil, fmt.Errorf("fleet: %d IDs per machine per millisecond exceed v1's 4,096", cfg.burst*cfg.roundsPerMs)
	}
	f := &fleet{cfg: cfg, clk: fakeclock.New(fleetStart), buf: make([]snowfence.ID, 0, cfg.burst)}
	for m := range cfg.machines {
		g, err := snowfence.New(snowfence.Config{
			Lease:       snowfence.Static(m, 0),
			Clock:       f.clk,
			ClockPolicy: snowfence.ClockOff,
		})
		if err != nil {
			return nil, err
		}
		f.gens = append(f.gens, g)
	}
	return f, nil
}

// nextID returns the fleet's next ID in arrival order.
func (f *fleet) nextID(ctx context.Context) (snowfence.ID, error) {
	if f.pos == len(f.buf) {
		if f.turn == len(f.gens) {
			f.turn = 0
			if f.round++; f.round == f.cfg.roundsPerMs {
				f.round = 0
				f.clk.Advance(time.Millisecond)
			}
		}
		buf, err := f.gens[f.turn].AppendN(ctx, f.buf[:0], f.cfg.burst)
		if err != nil {
			return 0, err
		}
		f.turn++
		f.buf, f.pos = buf, 0
	}
	id := f.buf[f.pos]
	f.pos++
	return id, nil
}

type fleetSource struct{ f *fleet }

func (s fleetSource) next(ctx context.Context, _ int64) (any, any, error) {
	id, err := s.f.nextID(ctx)
	return int64(id), int64(id), err
}

func snowfenceKind(cfg fleetConfig) kind {
	return kind{
		name:    "snowfence_bigint",
		label:   "snowfence BIGINT",
		keyDDL:  "id bigint PRIMARY KEY",
		keyCol:  "id",
		copyKey: true,
		how: fmt.Sprintf("%d snowfence generators (machines 0–%d, layout v1) take turns minting bursts of %d IDs; the shared clock advances 1 ms every %d turns of the fleet (%d IDs per ms)",
			cfg.machines, cfg.machines-1, cfg.burst, cfg.roundsPerMs, cfg.machines*cfg.burst*cfg.roundsPerMs),
		newSource: func() (source, error) {
			f, err := newFleet(cfg)
			if err != nil {
				return nil, err
			}
			return fleetSource{f}, nil
		},
	}
}
