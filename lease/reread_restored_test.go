package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// rereadStore is a real store whose next Extend fails as a lost reply
// does (an error of unknown outcome, after the write ran) and whose Get
// then reports what a table store reports when the record it read shows
// that the store went back in time: lease.ErrRestored.
type rereadStore struct {
	lease.Store
	armed atomic.Bool
}

func (s *rereadStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	nl, err := s.Store.Extend(ctx, l, markMs, leaseFor)
	if err == nil && s.armed.Load() {
		return nil, errors.New("connection reset by peer (the reply was lost)")
	}
	return nl, err
}

func (s *rereadStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	if s.armed.Swap(false) {
		return lease.Record{}, fmt.Errorf("%w: machine %d was seen held at epoch 7 and is now at epoch 6", lease.ErrRestored, machine)
	}
	return s.Store.Get(ctx, machine)
}

// TestKeeperRereadRestored: an extension of unknown outcome is decided by
// re-reading the record (hold.reread). When that read says the store went
// back in time — a table store comparing the row with the rows it saw —
// the lease is lost as to a restore at once: the generator stops, and the
// next lease starts the keeper's restore window after the loss. Taken for
// one more error of unknown outcome, the keeper would go on issuing on the
// lease until its self-fence, beside whoever the restore let claim it.
func TestKeeperRereadRestored(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := &rereadStore{Store: newStore(t, c.Endpoints())}
	clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
	h := mustHolder(t, s, clk, "a", lease.Range{Lo: 0, Hi: 3})
	h.mint(10)
	s.armed.Store(true)
	lostAt := clk.Now().WallMs + (2 * time.Second).Milliseconds()
	h.step(2 * time.Second) // the renewal: its reply lost, the re-read says restored
	st := h.k.Status()
	if st.Losses != 1 || !strings.Contains(st.LastError, lease.ErrRestored.Error()) {
		t.Fatalf("after the re-read: status %+v, want one loss with ErrRestored", st)
	}
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("right after the loss: %v, want ErrFenced (the next lease starts the restore window ahead)", err)
	}
	g, err := h.k.Grant()
	if err != nil {
		t.Fatalf("no grant after the re-claim: %v (status %+v)", err, h.k.Status())
	}
	if floor := lostAt + lease.RestoreWindow(10*time.Second, 5*time.Second).Milliseconds(); g.StartMs < floor {
		t.Errorf("the lease after the loss starts at %d, want ≥ the clock at the loss + the restore window = %d", g.StartMs, floor)
	}
}
