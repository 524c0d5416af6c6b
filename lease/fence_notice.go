package lease

import (
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/revert"
)

// The notice floor. A claim may take a number that a running holder is
// still issuing on: a store restored from an earlier state (an etcd
// snapshot, a table copied back) has that number free, with the mark it had
// then, and a claimer that never talked to the store before the restore —
// a process started just after it — has nothing to compare with, so no
// store can tell it. Nor can the claim be limited to numbers "not
// released": a number released in the restored state may have been claimed
// since by a holder that runs on. The running holder learns of the claim
// at its next renewal, which compares on its claim and fails. Until then
// it issues, so the claimer must not: the first grant of every claim
// starts at least the store's MaxNoticeWindow after the claim returned.
//
// Why the self-fence bounds it, and not the next renewal: every extension
// compares on the claim, so none applied after the new claim committed
// succeeds, and a re-read after an unknown outcome finds the new claim;
// the last renewal the running holder has acknowledged was therefore sent
// before the claim committed, and its generator stops SelfFence after that
// send time, whatever happens to its renewals since — failing, timing out
// and re-read, or delayed behind its other holds' steps. A bound by the
// renewal period and request timeouts alone would miss a holder whose
// renewals fail at the moment of the claim, and one whose renewal loop runs
// late (the next renewal of a hold is due RenewEvery after its last one
// ended, up to two request timeouts after it was sent).

// NoticeWindow is the longest a holder with this self-fence may go on
// issuing on its number after another claim of it committed, with clocks
// 8 % fast or slow and wall clocks up to 1 s apart: selfFence × 1.1 + 1 s,
// RestoreWindow's formula without the reserve. Its generator stops
// selfFence after the send time of its last acknowledged renewal, which was
// sent before the claim (see the package's notice floor, above); a
// self-fence timed on a clock 8 % slow lasts up to 1/0.92 ≈ 1.087 times as
// long in real time, and the claimer compares its own wall clock with the
// timestamps the holder stamps with its own.
func NoticeWindow(selfFence time.Duration) time.Duration {
	return RestoreWindow(0, selfFence)
}

// checkNotice refuses a keeper whose notice window is longer than its
// store's MaxNoticeWindow: the store's bound is what every other holder's
// claim waits out, so a holder with a longer self-fence could still be
// issuing when another's first grant starts. Load-bearing for uniqueness:
// change only with scripts/prove-search notice.
func (c *KeeperConfig) checkNotice() error {
	if revert.Notice {
		return nil
	}
	if w, maxW := NoticeWindow(c.SelfFence), c.Store.MaxNoticeWindow(); w > maxW {
		return fmt.Errorf("%w: this keeper's notice window %s (SelfFence %s × 1.1 + 1 s) is longer than the %s every claim on this store waits "+
			"before its first grant, so another holder's claim of its number could start issuing while it still does; "+
			"shorten SelfFence to at most %s", ErrInvalid, w, c.SelfFence, maxW, maxSelfFence(maxW))
	}
	return nil
}

// maxSelfFence is the longest self-fence whose NoticeWindow is within w.
func maxSelfFence(w time.Duration) time.Duration {
	return ((w - time.Second) * 10 / 11).Truncate(time.Millisecond)
}

// noticeFloor is where the first grant of a claim that returned at
// reading r may start: the MaxNoticeWindow of the keeper's store after r,
// as a wall-clock ms and as a monotonic reading (Grant.StartMono), so that
// neither clock stepped forward after the claim cuts it short (zero, zero
// with the fix reverted). It is the Store the keeper was given, which
// checkNotice checked its self-fence against, for every hold: a later
// layout step's hold claims through that store's Keyspace view, which a
// wrapper raising the bound forwards to the store beneath it. It keeps the
// claim's first IDs apart from those a holder that has not yet noticed the
// claim still issues. Load-bearing for uniqueness: change only with
// scripts/prove-search notice (and jump, for the monotonic reading).
func (h *hold) noticeFloor(r snowfence.Reading) (wallMs int64, mono time.Duration) {
	if revert.Notice {
		return 0, 0
	}
	w := h.k.cfg.Store.MaxNoticeWindow()
	wallMs = r.WallMs + int64((w+time.Millisecond-1)/time.Millisecond)
	return wallMs, noticeMono(r, w)
}
