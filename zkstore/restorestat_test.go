package zkstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// TestRestoreNoticedByStatAlone: a cold restore of a one-server ensemble
// takes back a renewal that moved no mark. Every record is as D last read
// it — holder, epoch, claim and mark — so the records show nothing; only
// the znode's data version, lower than D saw, does. D's next read must
// fail with lease.ErrRestored (and its store fence every lease claimed
// before): read as current, the restored data would let a claim start
// where the lost history's holders issued.
func TestRestoreNoticedByStatAlone(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	as, ds := open(t, e, path), open(t, e, path)
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, as, req("a", 1, 1, nowMs))
	cp := coldCopy(e)
	renewUnmovedSeen(t, as, ds, a)
	restoreAndPump(t, e, cp, path)
	var rec lease.Record
	if err := settle(t, func(ctx context.Context) error {
		var err error
		rec, err = ds.Get(ctx, 1)
		return err
	}); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("D's read of a znode whose data version fell (record %+v): %v; want ErrRestored", rec, err)
	}
}
