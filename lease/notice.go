package lease

import (
	"fmt"
	"time"
)

// The notice window. A holder cut off from its store goes on issuing on its
// number until its self-fence, SelfFence after the send time of its last
// acknowledged renewal; the store's MaxNoticeWindow bounds that for every
// holder of the store (a keeper whose own window is longer is refused at
// start), so that another holder may rely on it: the high-water file's
// floor at Close (highwater.go) keeps a restarted process of the host above
// what the embedded etcd's other holders may still issue.
//
// Not applied yet: a claim made just after a restore the claimer cannot
// see (a process started after an etcd snapshot or a table copy was put
// back) may take a number a running holder still issues on, until that
// holder's next renewal or its self-fence. Waiting out the store's window
// before every claim's first grant closes it (issue 25 found up to 361,000
// duplicate IDs that way), but costs every start, restart and re-claim that
// wait — 8 s on etcd, 36 s on the tables today, and as long as the
// self-fence a fleet chooses to ride out a store outage — so it waits for a
// design that does not tie every claim to the longest self-fence. Until
// then docs/runbook.md's step 1 (keep a restored store away from holders
// until raise-marks has run) is the protection.

// NoticeWindow is the longest a holder with this self-fence may go on
// issuing on its number after another claim of it committed, with clocks
// 8 % fast or slow and wall clocks up to 1 s apart: selfFence × 1.1 + 1 s,
// RestoreWindow's formula without the reserve. Its generator stops
// selfFence after the send time of its last acknowledged renewal, which was
// sent before the claim (no extension applied after it succeeds); a
// self-fence timed on a clock 8 % slow lasts up to 1/0.92 ≈ 1.087 times as
// long in real time, and the claimer compares its own wall clock with the
// timestamps the holder stamps with its own.
func NoticeWindow(selfFence time.Duration) time.Duration {
	return RestoreWindow(0, selfFence)
}

// checkNotice refuses a keeper whose notice window is longer than its
// store's MaxNoticeWindow: the store's bound is what every other holder
// relies on as the longest a cut-off holder goes on issuing.
func (c *KeeperConfig) checkNotice() error {
	if w, maxW := NoticeWindow(c.SelfFence), c.Store.MaxNoticeWindow(); w > maxW {
		return fmt.Errorf("%w: this keeper's notice window %s (SelfFence %s × 1.1 + 1 s) is longer than the %s this store bounds it at "+
			"for every holder, so it could still be issuing on its number when other holders take it to have stopped; "+
			"shorten SelfFence to at most %s", ErrInvalid, w, c.SelfFence, maxW, maxSelfFence(maxW))
	}
	return nil
}

// maxSelfFence is the longest self-fence whose NoticeWindow is within w.
func maxSelfFence(w time.Duration) time.Duration {
	return ((w - time.Second) * 10 / 11).Truncate(time.Millisecond)
}
