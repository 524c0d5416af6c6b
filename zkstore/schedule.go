package zkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// The fleet schedule record is the znode <path>/schedule, shared by every
// keyspace under the path: empty (or absent) while never set — the default
// schedule at version 0 — and otherwise the JSON of a schedule: the
// canonical text, the version (one more on every set) and the nonce of the
// write that set it, by which a write of unknown outcome recognises its
// own. Every write of it is a Set on the znode's data version read; every
// claim's multi-op checks that version, and every extension's too, so
// neither commits on a schedule other than the one it compared.
type schedule struct {
	Text    string `json:"schedule"`
	Version int64  `json:"version"`
	Write   string `json:"write,omitempty"`
}

// readSchedule reads the fleet schedule record after the caller's sync,
// with the znode's data version.
func (s *Store) readSchedule(ctx context.Context) (lease.FleetSchedule, schedule, int32, error) {
	m, err := s.readMeta(ctx, s.schedulePath())
	if err != nil {
		return lease.FleetSchedule{}, schedule{}, 0, err
	}
	if len(m.data) == 0 {
		return lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, schedule{}, m.version, nil
	}
	var sc schedule
	if err := json.Unmarshal(m.data, &sc); err != nil || sc.Text == "" || sc.Version < 1 {
		return lease.FleetSchedule{}, schedule{}, 0, fmt.Errorf("zkstore: %s holds %q, not a fleet schedule this store wrote (%v): "+
			"write it again with snowfence schedule set, or give the store a Path of its own", s.schedulePath(), m.data, err)
	}
	return lease.FleetSchedule{Text: sc.Text, Version: sc.Version}, sc, m.version, nil
}

// FleetSchedule implements lease.RegistryReader: the fleet schedule record
// (<path>/schedule), read after a sync; the default schedule at version 0
// when it was never set. Every keyspace under the path shares it.
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return lease.FleetSchedule{}, err
	}
	fs, _, _, err := s.readSchedule(ctx)
	if err == nil && generation(s.c) != g {
		err = errSwapped
	}
	return fs, err
}

// SetFleetSchedule implements lease.Admin: it writes text (in canonical
// form) as the fleet schedule at version prev+1 if the record is still at
// version prev (0: never set), with a Set conditioned on the znode's data
// version read after a sync: lease.ErrConflict if the record is at another
// version. After an error of unknown outcome it reads the record again and
// reports success if it carries this write's nonce.
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	return s.setSchedule(ctx, prev, text, false)
}

// SetFleetScheduleUnused implements lease.UnusedScheduleSetter: it is
// SetFleetSchedule made only while no lease record exists under the path,
// in any keyspace — none held, released, marked or quarantined, and so no
// claim journaled — checked in the same multi-op as the write: it creates
// and deletes the marker <path>/used, which every write that creates a
// lease record creates in its own multi-op (fence_unused.go), and which nothing
// else deletes. Of a claim and this write, whichever commits second fails:
// the claim on the schedule's version it checks, this write on the marker
// (lease.ErrInUse).
func (s *Store) SetFleetScheduleUnused(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	return s.setSchedule(ctx, prev, text, true)
}

// setSchedule is SetFleetSchedule, or with unused SetFleetScheduleUnused.
func (s *Store) setSchedule(ctx context.Context, prev int64, text string, unused bool) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	canon, err := lease.CanonicalSchedule(text)
	if err != nil || text == "" {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule %q: %v; give a schedule such as v1 or v1,v2@2030-01-01T00:00:00Z", lease.ErrInvalid, text, err)
	}
	if prev < 0 {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule version %d is negative: give the version FleetSchedule read", lease.ErrInvalid, prev)
	}
	want := lease.FleetSchedule{Text: canon, Version: prev + 1}
	nonce := lease.NewNonce()
	body, _ := json.Marshal(schedule{Text: canon, Version: prev + 1, Write: nonce})
	for range maxConflicts {
		g := generation(s.c)
		if err := s.sync(ctx); err != nil {
			return lease.FleetSchedule{}, fmt.Errorf("zkstore: set the fleet schedule: %w", err)
		}
		cur, _, ver, err := s.readSchedule(ctx)
		if err != nil {
			return lease.FleetSchedule{}, err
		}
		wasUsed := false
		if unused {
			if wasUsed, err = s.pathUsed(ctx); err != nil {
				return lease.FleetSchedule{}, fmt.Errorf("zkstore: set the fleet schedule: look for lease records: %w; retry", err)
			}
		}
		if generation(s.c) != g {
			return lease.FleetSchedule{}, errSwapped
		}
		if cur.Version != prev {
			if cur == want {
				return want, nil // a retry of a write that committed, or the same write by another
			}
			return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is at version %d (%q), not %d; read it again and retry",
				lease.ErrConflict, cur.Version, cur.Text, prev)
		}
		if wasUsed {
			return lease.FleetSchedule{}, s.inUse(ctx)
		}
		var ops []any
		if unused {
			ops = append(ops, s.unusedOps()...) // fence_unused.go
		}
		ops = append(ops, &zk.SetDataRequest{Path: s.schedulePath(), Data: body, Version: ver})
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.log.Warn("fleet schedule set", "schedule", canon, "version", want.Version, "unused_store", unused)
			return want, nil
		case unused && failedOp(res) == 0 && errors.Is(err, zk.ErrNodeExists):
			return lease.FleetSchedule{}, s.inUse(ctx)
		case definite(err):
			continue // changed since the read: read again
		}
		rctx, cancel := s.rereadCtx(ctx)
		defer cancel()
		if rerr := s.sync(rctx); rerr == nil {
			if _, sc, _, rerr := s.readSchedule(rctx); rerr == nil && sc.Write == nonce {
				return want, nil
			}
		}
		return lease.FleetSchedule{}, fmt.Errorf("zkstore: set the fleet schedule to %q at version %d: %w; the outcome is unknown: "+
			"read it with FleetSchedule and retry", canon, want.Version, err)
	}
	return lease.FleetSchedule{}, fmt.Errorf("zkstore: set the fleet schedule: %s changed under %d reads in a row; retry", s.schedulePath(), maxConflicts)
}

// inUse is SetFleetScheduleUnused's lease.ErrInUse, with the lease records
// it finds under the path (a count for the message only: the marker is
// what the write checks).
func (s *Store) inUse(ctx context.Context) error {
	n, err := s.countRecords(ctx)
	found := fmt.Sprintf("%d lease records", n)
	if err != nil {
		found = "lease records (counting them failed: " + err.Error() + ")"
	}
	return fmt.Errorf("%w: %s exist under %s (marker %s): the fleet schedule changes at once only under a path that never held one; "+
		"give the notice (a cutover at least 1 h past every clock and mark)", lease.ErrInUse, found, s.cfg.Path, s.usedPath())
}

// countRecords counts the lease znodes of every keyspace under the path.
func (s *Store) countRecords(ctx context.Context) (int, error) {
	regions, err := call(ctx, func() ([]string, error) {
		kids, _, err := s.c.Children(s.leasesPath())
		return kids, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range regions {
		kids, err := call(ctx, func() ([]string, error) {
			kids, _, err := s.c.Children(s.leasesPath() + "/" + r)
			return kids, err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return n, err
		}
		n += len(kids)
	}
	return n, nil
}

// claimSchedule is what a claim reads of the records beside the leases,
// after its sync, and checks in its multi-op (checks): the data versions
// of the fleet schedule record and of the registry's copy it compared, and
// whether the used marker exists (meta.go).
type claimSchedule struct {
	fleetVer, regVer int32
	used             bool
}

// readClaimSchedule reads, after the claim's sync, the fleet schedule
// record, the registry's copy and the used marker, and refuses req with
// lease.ErrSchedule unless its schedule is the record's
// (lease.CheckSchedule) and the registry records none or the record's
// (lease.CheckRecordedSchedule): two layouts in force at one instant can
// give two holders the same IDs.
func (s *Store) readClaimSchedule(ctx context.Context, req lease.ClaimRequest) (claimSchedule, error) {
	fs, _, fleetVer, err := s.readSchedule(ctx)
	if err != nil {
		return claimSchedule{}, err
	}
	reg, regVer, err := s.readRegistry(ctx)
	if err != nil {
		return claimSchedule{}, err
	}
	if err := checkClaimSchedule(req.Schedule, fs); err != nil {
		return claimSchedule{}, err
	}
	if err := checkClaimRegistry(reg, fs); err != nil {
		return claimSchedule{}, err
	}
	used, err := s.used(ctx)
	if err != nil {
		return claimSchedule{}, err
	}
	return claimSchedule{fleetVer: fleetVer, regVer: regVer, used: used}, nil
}

// checks are the ops of a claim's multi-op that commit it only on the
// fleet schedule record and the registry's copy it compared: a change of
// either between the claim's read and its write fails it, so no holder
// claims under a schedule other than the fleet's (fence_schedule.go,
// fence_registry.go).
func (cs claimSchedule) checks(s *Store) []any {
	return append(s.scheduleCheck(cs.fleetVer), s.registryCheck(cs.regVer)...)
}
