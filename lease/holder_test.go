package lease_test

import (
	"context"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// Two keepers of one process, neither given a holder, get different
// holder strings: a table store that recognised "my claim" by holder could
// otherwise take one keeper's claim for the other's.
func TestDefaultHolderUniquePerKeeper(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	proc, err := lease.ThisProcess()
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for range 2 {
		k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Range: &lease.Range{Lo: 0, Hi: 1}, Clock: fakeclock.New(t0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) }) // no generator
		holders = append(holders, k.Status().Holder)
	}
	if holders[0] == holders[1] {
		t.Fatalf("two keepers of one process share the default holder %q", holders[0])
	}
	for _, h := range holders {
		if !strings.HasPrefix(h, proc+"/k") {
			t.Errorf("default holder %q, want ThisProcess() %q followed by /k<N>", h, proc)
		}
	}
	if again, _ := lease.ThisProcess(); again != proc {
		t.Errorf("ThisProcess() changed from %q to %q: it is the process identity", proc, again)
	}
}
