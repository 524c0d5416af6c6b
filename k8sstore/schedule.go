package k8sstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// The fleet schedule record is the object <prefix>-schedule, shared by
// every keyspace of the prefix, its annotation snowfence.io/schedule
// holding the JSON of a schedule: the canonical text, the version (one
// more on every set) and the nonce of the write that set it, by which a
// write of unknown outcome recognises its own. Absent while never set:
// the default schedule at version 0.

// scheduleKey is the annotation of the fleet schedule record.
const scheduleKey = "snowfence.io/schedule"

func (s *Store) scheduleName() string { return s.cfg.Prefix + "-schedule" }

type schedule struct {
	Text    string `json:"schedule"`
	Version int64  `json:"version"`
	Write   string `json:"write,omitempty"`
}

// readSchedule reads the fleet schedule record, with the object as read.
func (s *Store) readSchedule(ctx context.Context) (lease.FleetSchedule, schedule, metaObject, error) {
	m, err := s.readMeta(ctx, s.scheduleName(), scheduleKey)
	if err != nil {
		return lease.FleetSchedule{}, schedule{}, metaObject{}, err
	}
	if !m.exists {
		return lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, schedule{}, m, nil
	}
	var sc schedule
	if err := json.Unmarshal([]byte(m.raw), &sc); err != nil || sc.Text == "" || sc.Version < 1 {
		return lease.FleetSchedule{}, schedule{}, metaObject{}, fmt.Errorf("%w: lease %s in namespace %s holds %q in %s, not a fleet "+
			"schedule this store wrote (%v): give the store a Prefix of its own", ErrNotRecord, s.scheduleName(), s.cfg.Namespace, m.raw, scheduleKey, err)
	}
	return lease.FleetSchedule{Text: sc.Text, Version: sc.Version}, sc, m, nil
}

// FleetSchedule implements lease.RegistryReader: the fleet schedule record
// (the object <prefix>-schedule), read with a quorum read; the default
// schedule at version 0 when it was never set. Every keyspace of the
// prefix shares it.
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	fs, _, _, err := s.readSchedule(ctx)
	return fs, err
}

// SetFleetSchedule implements lease.Admin: it writes text (in canonical
// form) as the fleet schedule at version prev+1 if the record is still at
// version prev (0: never set) — a Create when there is no object, else one
// JSON patch testing the resourceVersion and the record read:
// lease.ErrConflict if the record is at another version. After an error of
// unknown outcome it reads the record again and reports success if it
// carries this write's nonce.
//
// The store does not implement lease.UnusedScheduleSetter: a JSON patch
// tests one object, so no write of the schedule can also check that no
// lease object exists in any keyspace (as DynamoDB conditions a write on
// one item only). lease.SetSchedule therefore keeps the notice rule on it.
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
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
		cur, _, m, err := s.readSchedule(ctx)
		if err != nil {
			return lease.FleetSchedule{}, err
		}
		if cur.Version != prev {
			if cur == want {
				return want, nil // a retry of a write that committed, or the same write by another
			}
			return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is at version %d (%q), not %d; read it again and retry",
				lease.ErrConflict, cur.Version, cur.Text, prev)
		}
		err = s.writeMeta(ctx, s.scheduleName(), scheduleKey, m, string(body))
		switch {
		case err == nil:
			s.log.Warn("fleet schedule set", "schedule", canon, "version", want.Version)
			return want, nil
		case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoNamespace):
			return lease.FleetSchedule{}, fmt.Errorf("k8sstore: set the fleet schedule: %w", err)
		case definite(err):
			continue // changed since the read: read again
		}
		rctx, cancel := s.rereadCtx(ctx)
		_, sc, _, rerr := s.readSchedule(rctx)
		cancel()
		if rerr == nil && sc.Write == nonce {
			return want, nil
		}
		return lease.FleetSchedule{}, fmt.Errorf("k8sstore: set the fleet schedule to %q at version %d: %w; the outcome is unknown: "+
			"read it with FleetSchedule and retry", canon, want.Version, err)
	}
	return lease.FleetSchedule{}, fmt.Errorf("k8sstore: set the fleet schedule: lease %s changed under %d reads in a row; retry", s.scheduleName(), maxConflicts)
}
