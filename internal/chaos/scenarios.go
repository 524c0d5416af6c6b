package chaos

import "time"

// A scenario is one named, repeatable failure story.
type scenario struct {
	id, name string
	run      func(*Env) error
}

// scenarios lists the suite in order. Each family is in a file of its
// own: scenarios_clock.go (1–3), scenarios_frozen.go (4),
// scenarios_etcd.go (5a–5e), scenarios_crash.go (6), scenarios_burst.go
// (7) and scenarios_network.go (8).
func scenarios() []scenario {
	return []scenario{
		{"1", "node 5's clock steps back 280 ms under 180,000 IDs/s on 32 generators", clockStepUnderLoad},
		{"2", "worker 17 steps back 40 ms (refused), then 3 ms (waited out)", smallStepsBack},
		{"3", "a forward jump of 10 minutes on one node", forwardJump},
		{"4", "a holder frozen (SIGSTOP) past its lease while another takes its number", frozenHolder},
		{"5a", "etcd: the leader killed (SIGKILL)", func(e *Env) error { return etcdFault(e, "leader") }},
		{"5b", "etcd: quorum lost for 3 s", func(e *Env) error { return etcdFault(e, "quorum3") }},
		{"5c", "etcd: quorum lost for 30 s", func(e *Env) error { return etcdFault(e, "quorum30") }},
		{"5d", "etcd: the cluster restored from an old snapshot", func(e *Env) error { return etcdFault(e, "restore") }},
		{"5e", "etcd: one member's data rolled back to an old copy", func(e *Env) error { return etcdFault(e, "rollback") }},
		{"6", "crash loops: holders SIGKILLed and restarted 100 times", crashLoops},
		{"7", "bursts past 4,096 IDs in one millisecond on one holder", bursts},
		{"8", "a holder cut off from etcd while it still serves callers", cutOff},
	}
}

// Lease timings for scenarios that wait for a lease to expire: the
// production ratios (TTL : renewal : self-fence = 10 : 2 : 5) shortened.
const (
	fastTTL       = 3 * time.Second
	fastRenew     = 500 * time.Millisecond
	fastSelfFence = 1500 * time.Millisecond
)
