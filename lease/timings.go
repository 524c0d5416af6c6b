package lease

import "time"

// Timings are the timings of a KeeperConfig that suit one kind of store:
// how long a lease lives, how often it is renewed, how soon without an
// acknowledged renewal the generator stops, and the margin kept below the
// stored mark. Each store package says which suit it (etcdstore.Timings,
// pgstore.Timings, dynamostore.Timings), and a program pairing a store with
// StartKeeper applies them:
//
//	kc := lease.KeeperConfig{Store: store}
//	pgstore.Timings().Apply(&kc)
//	k, err := lease.StartKeeper(ctx, kc)
//
// A zero field leaves the keeper's own default (see KeeperConfig).
type Timings struct {
	// LeaseFor is KeeperConfig.LeaseFor: how long a lease lives in the
	// store without renewal.
	LeaseFor time.Duration
	// RenewEvery is KeeperConfig.RenewEvery: the renewal period.
	RenewEvery time.Duration
	// SelfFence is KeeperConfig.SelfFence: how long after the last
	// acknowledged renewal the generator stops issuing.
	SelfFence time.Duration
	// Margin is KeeperConfig.Margin: how far below the stored mark the
	// generator stops issuing.
	Margin time.Duration
}

// Apply sets each of the four timings of c that is zero to t's, and leaves
// the ones c sets. A KeeperConfig cannot tell a zero Margin meant as "none"
// from one left unset: to keep no margin under timings that have one, set
// it after Apply.
func (t Timings) Apply(c *KeeperConfig) {
	for _, f := range []struct {
		field *time.Duration
		value time.Duration
	}{
		{&c.LeaseFor, t.LeaseFor},
		{&c.RenewEvery, t.RenewEvery},
		{&c.SelfFence, t.SelfFence},
		{&c.Margin, t.Margin},
	} {
		if *f.field == 0 {
			*f.field = f.value
		}
	}
}

// TableTimings returns the timings of a lease table, where the lease is
// the reservation (pgstore.Timings and dynamostore.Timings return them,
// each store saying why they suit it): a 5-minute lease renewed every 5 s,
// a 4 min 10 s self-fence and a 5 s margin.
//
// The self-fence follows the lease, so that a holder cut off from its table
// rides out the outage: it is the longest whole ten seconds S that stops
// before the lease's expiry less the margin with the keeper's clock-rate
// budget (clocks 8 % fast or slow): S × 1.08 ≤ (LeaseFor − Margin) × 0.92,
// 250 s ≤ 251.3 s. A holder issues through an outage of up to S − RenewEvery
// − RenewEvery/4 − RequestTimeout = 4 min 1 s (its last acknowledged
// renewal may be a period old when the outage begins, and the first one
// after it comes a retry and a timeout later), and refuses from S after its
// last acknowledged renewal, about 50 s before its lease expires. The
// price is the notice window every claim's first grant waits:
// NoticeWindow(S) = 4 min 36 s, which the tables' MaxNoticeWindow (4 min
// 40 s) covers (docs/lease-stores.md#outages).
func TableTimings() Timings {
	return Timings{
		LeaseFor:   5 * time.Minute,
		RenewEvery: 5 * time.Second,
		SelfFence:  4*time.Minute + 10*time.Second,
		Margin:     5 * time.Second,
	}
}
