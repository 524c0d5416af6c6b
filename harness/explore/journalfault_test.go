package explore

import (
	"context"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// journalFaultService is a service whose stores drop the oldest entry of
// every number's journal from what History returns: a journal that lost a
// claim it should have kept. The keepers never read the journal, so the
// worlds run as they would; only the journal oracle sees the fault.
type journalFaultService struct{ service }

func (s journalFaultService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	sp, err := s.service.space(ctx, seed, stores)
	if err != nil {
		return nil, err
	}
	return journalFaultSpace{sp}, nil
}

type journalFaultSpace struct{ space }

func (s journalFaultSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	st, err := s.space.open(ctx, store, region)
	if err != nil {
		return nil, err
	}
	return dropOldestEntry{st}, nil
}

// dropOldestEntry is a lease.Admin whose History leaves out the oldest
// entry.
type dropOldestEntry struct{ lease.Admin }

func (d dropOldestEntry) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	h, err := d.Admin.History(ctx, machine)
	if len(h) > 0 {
		h = h[1:]
	}
	return h, err
}

func (d dropOldestEntry) Keyspace(index int) (lease.Store, error) {
	return d.AdminKeyspace(index)
}

func (d dropOldestEntry) AdminKeyspace(index int) (lease.Admin, error) {
	st, err := d.Admin.AdminKeyspace(index)
	if err != nil {
		return nil, err
	}
	return dropOldestEntry{st}, nil
}

// TestJournalOracleFails proves that the journal oracle can fail: on etcd
// (whose journal is built), with a store that drops the oldest journal
// entry of every number, worlds drawn from the first seeds must end in an
// EXPLORE JOURNAL finding within a few seeds: the first IDs of the first
// holders are then in no entry, in worlds where nothing took history away.
// It runs in short mode, on short worlds.
func TestJournalOracleFails(t *testing.T) {
	const seeds, steps = 8, 40
	svc := startService(t, storeEtcd)
	defer svc.close()
	fsvc := journalFaultService{svc}
	fig := newFigures()
	for seed := uint64(1); seed <= seeds; seed++ {
		failure, _ := runWorld(t, fsvc, draw(seed, storeEtcd, steps), fig)
		switch {
		case strings.HasPrefix(failure, journalMarker):
			t.Logf("seed %d found the dropped journal entry:\n%s", seed, firstLines(failure, 3))
			return
		case failure != "":
			t.Fatalf("seed %d failed, but not on the journal:\n%s", seed, failure)
		}
	}
	t.Fatalf("%d seeds of %d steps with the oldest journal entry of every number dropped: no %s finding\n%s", seeds, steps, journalMarker, fig)
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
