package pgstore_test

// Found by the adversarial review of the fixes for issue 10.

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// On PostgreSQL. After a failover the origin's floor is the
// noticing claimer's clock plus that claimer's own restore window; nothing
// bounds it by the window of the holder the failover cut off. A holder
// running serve's table timings (lease 5 min, reserve 5 min, self-fence
// 30 s) holds machine 1; its claim never reached the standby that is
// promoted (an asynchronous failover), and it is cut off from the new
// primary just after a renewal, so it goes on issuing for up to 30 s. A
// library keeper on the same table with KeeperConfig's defaults (window
// 12 s) makes the first claim on the new timeline, gets machine 1 and
// starts 12 s after it noticed: inside what the cut-off holder issues. The
// floor is now at least the store's MaxRestoreWindow, the longest window
// any keeper on it may have.
func TestFailoverFloorCoversEveryHoldersWindow(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	ident, set := fakeIdentity(t, pool, table)
	sA, sB := openFake(t, pool, table, ident), openFake(t, pool, table, ident)
	now := time.Now().UnixMilli()
	serveWindow := lease.RestoreWindow(5*time.Minute, 30*time.Second)
	la, err := sA.Claim(t.Context(), lease.ClaimRequest{Holder: "serve", Range: lease.Range{Lo: 1, Hi: 1}, NowMs: now,
		LeaseFor: 5 * time.Minute, MaxAhead: 2 * time.Second, RestoreWindow: serveWindow})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sA.Extend(t.Context(), la, now+5*time.Minute.Milliseconds(), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	lastAck := now // the serve holder issues until lastAck + 30 s (its self-fence)

	// The standby promoted never received the claim of machine 1 (the row
	// stands for the standby's state), and it writes a new timeline.
	if _, err := pool.Exec(t.Context(), "DELETE FROM "+pgx.Identifier{table}.Sanitize()+" WHERE machine_id = 1"); err != nil {
		t.Fatal(err)
	}
	set("7000000000000000001", 2)

	notice := now + 1000
	lb, err := sB.Claim(t.Context(), lease.ClaimRequest{Holder: "library", Range: lease.Range{Lo: 1, Hi: 1}, NowMs: notice,
		LeaseFor: 10 * time.Second, MaxAhead: time.Minute, RestoreWindow: lease.RestoreWindow(10*time.Second, 5*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if until := lastAck + (30 * time.Second).Milliseconds(); lb.StartMs < until {
		t.Errorf("the claim of machine 1 after the failover starts at +%dms, while the holder cut off by it issues until +%dms "+
			"(its self-fence): the same timestamps on the same number", lb.StartMs-lastAck, until-lastAck)
	}
}
