//go:build linux

package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/soaktest"
	"github.com/snowfence/snowfence/lease"
)

// TestSoakKilledHoldersNeverDuplicate runs 16 holders in 8 child processes
// on one small range of machine numbers (0–23, so numbers change hands
// often), minting continuously, while the parent SIGKILLs a random process
// every 0.3–1.5 s and starts a fresh one in its place, or now and then
// (one time in three) SIGSTOPs one for 1–4 s instead (often past the 3 s
// lease: it wakes to find its numbers taken). Every ID a child sent
// counts (a killed child's unsent IDs never left it). The parent checks
// that no ID occurs twice, that no two holders ever stamped the same
// millisecond on the same number (the fence's promise, stronger than
// uniqueness), and that each holder's IDs strictly increase.
//
// SNOWFENCE_SOAK_SEED replays a kill schedule; the seed is logged.
func TestSoakKilledHoldersNeverDuplicate(t *testing.T) {
	const procs, perProc = 8, 2
	dur := 15 * time.Second
	if testing.Short() {
		dur = 4 * time.Second
	}
	// The first children issue only after the store's notice window.
	warm := etcdstore.MaxNoticeWindow + 2*time.Second
	c := etcdtest.Start(t, 1)
	cfg := childConfig{
		Endpoints: c.Endpoints(), Prefix: "/test/" + t.Name(), Range: lease.Range{Lo: 0, Hi: 23},
		Holders: perProc, Batch: 10, Every: 5 * time.Millisecond, Lifetime: warm + dur + 30*time.Second,
		LeaseFor: shortLeaseFor, RenewEvery: shortRenewEvery, SelfFence: shortSelfFence,
	}
	soaktest.Soak{Name: "soak", Procs: procs, Warmup: warm, Child: childHolder(cfg), Duration: dur, Pauses: true,
		MinHolders: procs * perProc}.Run(t)
}
