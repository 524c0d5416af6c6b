package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// TestNodeStepRightAfterStartFenced: node.Start returns once the
// keeper's grant has started (WaitIssuing reads the keeper's grant, not
// the generator), so the generator has taken no reading of its own yet. A
// wall clock stepped forward between Start and the first request is never
// seen as a jump (it is measured between two of the generator's readings):
// the first ID is stamped on the jumped clock with no clock-jumped fence,
// where the same step one request later is refused until a renewal after
// it. With a store restored meanwhile this is
// lease's TestJumpFenceStepBeforeFirstID (400 IDs twice). Entry point
// node.Start on the embedded etcd, a wall-offset clock over the system
// clock (as serve --test-clock-offset runs), Keeper.Boottime set.
func TestNodeStepRightAfterStartFenced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	oc := offsetclock.New(snowfence.SystemClock())
	cfg := embedded(t.TempDir(), lease.Range{Lo: 12, Hi: 12})
	cfg.Generator.Clock = oc
	cfg.Keeper.Boottime = lease.Boottime
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	oc.Step(7 * time.Second)
	_, err = n.Generator.Next(ctx)
	var fe *snowfence.FencedError
	t.Logf("first Next after a 7 s step: %v (forward jumps seen %d)", err, n.Generator.Stats().ForwardJumps)
	if !errors.As(err, &fe) {
		t.Errorf("the first ID after node.Start and a 7 s forward step was issued on the jumped clock, unfenced: the step was never seen")
	}
}
