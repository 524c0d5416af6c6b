package lease

import "time"

// A keeper's loop that stops coming round. The run loop (keeper.go) is the
// keeper's only worker: it claims, renews, retires and waits, every store
// call bounded by RequestTimeout. A loop that has not come round for much
// longer than that allows is wedged — a store client that ignores its
// context, a write of the high-water file on a hung filesystem, a bug —
// and never renews again: its generator fences itself (which keeps IDs
// unique) and stays fenced. Nothing in the process can undo that; a restart
// can. Stalled tells the process's liveness check (server's GET /livez) so,
// apart from every refusal that clears on its own (a store outage, a clock
// step, a fenced wait, a spare's wait for a number), during which the loop
// keeps coming round.

// stallSteps is how many store calls one step of a hold may make, each
// within RequestTimeout: a claim (Claim, then Claim again for a number
// within MaxWait, or releasing a number of the wrong keyspace) followed by
// its first renewal (Extend, then after an error of unknown outcome Get and
// Extend again, and Release after a quarantine).
const stallSteps = 6

// turn records that the run loop came round now.
func (k *Keeper) turn() { k.turned.Store(int64(k.cfg.Clock.Now().Mono)) }

// stallFloor is the least StallAfter: the formula's bound counts the
// keeper's RequestTimeout per store call, but a store's own follow-up
// calls after an error of unknown outcome run on its own timeout (etcd's
// adopt and revoke, pgstore's adopt, dynamostore's re-read: 5 s each by
// default), so a step during an outage can take 10 s and more past it. A
// loop that is truly wedged has fenced its generator already (no ID
// repeats), so noticing it a minute later costs nothing; calling an
// outage a wedge costs a restart and a claim's notice window (an attack
// on /livez found it: a --renew-every of 500 ms on DynamoDB, or 1 s on
// etcd, gave false 503s through an outage).
const stallFloor = time.Minute

// StallAfter is how long the keeper's run loop may go without coming round
// before Stalled calls it wedged: twice the longest a running loop takes —
// its longest wait between two steps (RenewEvery, or a waiting spare's
// longest backoff, whichever is longer) and one step's store calls (six
// RequestTimeouts) —, the factor of two for a host under load and the
// high-water file's writes, and never less than a minute (stallFloor: a
// store's own follow-up calls are bounded by its own timeouts, not the
// keeper's). At etcd's and the lease tables' default timings (16 s and
// 40 s by the formula) it is the minute.
func (k *Keeper) StallAfter() time.Duration {
	c := &k.cfg
	wait := max(c.RenewEvery, claimRetryMin)
	return max(2*(wait+stallSteps*c.RequestTimeout), stallFloor)
}

// Stalled reports how long ago, on the keeper's monotonic clock, its run
// loop last came round, and whether that is longer than StallAfter: the
// loop is wedged, and only a restart of the process brings the holder
// back. A keeper that has stopped on purpose is never stalled: once Close
// has begun, or after its first claim was refused for good (Failed: its
// owner is told through Err, and shuts down). A host suspend does not count
// (the monotonic clock stops with it); a frozen process does until its loop
// runs again, which it does first thing once thawed.
func (k *Keeper) Stalled() (since time.Duration, stalled bool) {
	k.mu.Lock()
	closed, failed := k.closed, k.err != nil
	k.mu.Unlock()
	if closed || failed {
		return 0, false
	}
	since = k.cfg.Clock.Now().Mono - time.Duration(k.turned.Load())
	return since, since > k.StallAfter()
}
