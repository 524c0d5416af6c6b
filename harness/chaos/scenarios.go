package chaos

import (
	"slices"
	"strings"
	"time"
)

// A scenario is one named, repeatable failure story.
type scenario struct {
	id, name string
	run      func(*Env) error
	// stores are the stores it applies to; nil: every store. On the
	// others its row says n/a.
	stores []string
	// shortOn are the stores whose short mode runs it; nil: every store
	// it applies to. Elsewhere it runs in the long mode, or when named.
	shortOn []string
	// libraryOnly: with stores nil, it runs on Kubernetes too, with
	// library holders alone (Env.serves); the others, whose stories need
	// services, say n/a there.
	libraryOnly bool
}

// skip says why sc does not run on store in this mode ("" if it runs):
// it does not apply there, or the short mode leaves it out (unless the
// run names it).
func (sc scenario) skip(store string, long, named bool) string {
	if sc.stores != nil && !slices.Contains(sc.stores, store) {
		return "n/a (" + strings.Join(sc.stores, ", ") + " only)"
	}
	if sc.stores == nil && store == StoreKubernetes && !sc.libraryOnly {
		return "n/a on kubernetes (its services: the suite starts no snowfence serve on Kubernetes yet)"
	}
	if !long && !named && sc.shortOn != nil && !slices.Contains(sc.shortOn, store) {
		return "long mode only on " + store
	}
	return ""
}

// etcdOnly marks a scenario of etcd's own faults; onEtcd one the short
// mode runs on etcd only (it runs on the tables in the long mode).
var (
	etcdOnly = []string{StoreEtcd}
	onEtcd   = []string{StoreEtcd}
	// zkOnly marks ZooKeeper's own faults (scenarios_zookeeper.go);
	// notZK a scenario whose short mode runs on every store but
	// ZooKeeper, whose short mode keeps to its own faults and 8a's
	// partition (the CI budget of its step).
	zkOnly = []string{StoreZooKeeper}
	notZK  = []string{StoreEtcd, StorePostgres, StoreDynamoDB}
	// k8sOnly marks Kubernetes' own faults (scenarios_kubernetes.go),
	// whose short mode keeps to them, as ZooKeeper's does.
	k8sOnly = []string{StoreKubernetes}
	// onPostgres and onDynamoDB mark a story of the holders rather than
	// of the store (1, 6 and 3b, 7) whose short mode runs on one lease
	// table instead of etcd: the stores run side by side in scripts/test,
	// and etcd's lanes were the run's longest (about 300 s of scenarios
	// each, against 140 s on each table), so spreading these four makes
	// every lane about as long (about 220 s) and the step about 70 s
	// shorter, with every scenario still run once. They run on every
	// store in the long mode.
	onPostgres = []string{StorePostgres}
	onDynamoDB = []string{StoreDynamoDB}
)

// scenarios lists the suite in order. Each family is in a file of its
// own: scenarios_clock.go (1–3), scenarios_leap.go (3b), scenarios_frozen.go (4),
// scenarios_etcd.go (5a–5e), scenarios_etcdcrash.go (5f–5h),
// scenarios_crash.go (6), scenarios_burst.go (7), scenarios_network.go,
// scenarios_partition.go and scenarios_degraded.go (8a–8c) and
// scenarios_table.go (9a–9d PostgreSQL,
// 10a–10c DynamoDB), scenarios_outage.go (9e–9g, 10d–10f), scenarios_region.go (11)
// scenarios_zookeeper.go (12a–12d ZooKeeper, on tableFault's shapes) and
// scenarios_kubernetes.go (13a–13d Kubernetes, library holders only).
func scenarios() []scenario {
	return []scenario{
		{id: "1", name: "node 5's clock steps back 280 ms under 180,000 IDs/s on 32 generators", run: clockStepUnderLoad, shortOn: onPostgres},
		{id: "2", name: "worker 17 steps back 40 ms (refused), then 3 ms (waited out)", run: smallStepsBack, shortOn: onEtcd},
		{id: "3", name: "a forward jump of 10 minutes on one node", run: forwardJump, shortOn: onEtcd},
		{id: "3b", name: "a leap second: one holder repeats 23:59:59 at midnight UTC, one is smeared", run: leapSecond, shortOn: onDynamoDB},
		{id: "4", name: "a holder frozen (SIGSTOP) past its lease while another takes its number", run: frozenHolder, shortOn: notZK, libraryOnly: true},
		{id: "5a", name: "etcd: the leader killed (SIGKILL)", run: func(e *Env) error { return etcdFault(e, "leader") }, stores: etcdOnly},
		{id: "5b", name: "etcd: quorum lost for 3 s", run: func(e *Env) error { return etcdFault(e, "quorum3") }, stores: etcdOnly},
		{id: "5c", name: "etcd: quorum lost for 30 s", run: func(e *Env) error { return etcdFault(e, "quorum30") }, stores: etcdOnly, shortOn: []string{}}, // long mode only: 5b loses the quorum, 8a cuts holders off past the self-fence (CI's 20 minutes)
		{id: "5d", name: "etcd: the cluster restored from an old snapshot", run: func(e *Env) error { return etcdFault(e, "restore") }, stores: etcdOnly},
		{id: "5e", name: "etcd: one member's data rolled back to an old copy", run: func(e *Env) error { return etcdFault(e, "rollback") }, stores: etcdOnly},
		{id: "5f", name: "etcd: the leader killed (SIGKILL) with a 3 s election timeout: holders fence in the gap", run: slowElection, stores: etcdOnly},
		{id: "5g", name: "etcd: a member's disk full (a small tmpfs), then freed", run: diskFull, stores: etcdOnly},
		{id: "5h", name: "etcd: a member re-added from an empty data directory, then the quorum rests on it", run: readdEmpty, stores: etcdOnly},
		{id: "6", name: "crash loops: holders SIGKILLed and restarted 100 times", run: crashLoops, shortOn: onPostgres},
		{id: "7", name: "bursts past 4,096 IDs in one millisecond on one holder", run: bursts, shortOn: onDynamoDB},
		{id: "8a", name: "holders in network namespaces cut off from the store (kernel) past the self-fence; callers still reach them", run: cutLong, libraryOnly: true}, // Kubernetes: cutLongLibraries
		{id: "8b", name: "holders cut off from the store for less than the self-fence", run: cutShort, shortOn: onEtcd},
		{id: "8c", name: "the holders' link to the store degraded under load (netem 200 ms ± 50 ms, 5 % loss, reordering; tbf where the kernel lacks netem)", run: degradedLink, shortOn: onEtcd},
		{id: "9a", name: "PostgreSQL stopped (pg_ctl stop -m immediate) past the self-fence, then started", run: func(e *Env) error { return tableFault(e, "stop") }, stores: []string{StorePostgres}},
		{id: "9b", name: "PostgreSQL frozen (SIGSTOP of every server process) for less than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-short") }, stores: []string{StorePostgres}},
		{id: "9c", name: "PostgreSQL frozen for more than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-long") }, stores: []string{StorePostgres}},
		{id: "9d", name: "PostgreSQL restored from an old base backup, then raise-marks (the runbook's step)", run: func(e *Env) error { return tableFault(e, "restore") }, stores: []string{StorePostgres}, shortOn: []string{}},
		{id: "9e", name: "PostgreSQL frozen for 60 s on serve's default flags: no refusal", run: func(e *Env) error { return tableOutage(e, time.Minute) }, stores: []string{StorePostgres}, shortOn: []string{}},
		{id: "9f", name: "PostgreSQL frozen for 4 minutes on serve's default flags: no refusal", run: func(e *Env) error { return tableOutage(e, 4*time.Minute) }, stores: []string{StorePostgres}, shortOn: []string{}},
		{id: "9g", name: "PostgreSQL frozen for 5 min 30 s, past the lease, on serve's default flags: fenced before the expiry", run: func(e *Env) error { return tableOutage(e, 5*time.Minute+30*time.Second) }, stores: []string{StorePostgres}, shortOn: []string{}},
		{id: "10a", name: "DynamoDB (dynalite) killed (SIGKILL) past the self-fence, then started on its data", run: func(e *Env) error { return tableFault(e, "stop") }, stores: []string{StoreDynamoDB}},
		{id: "10b", name: "DynamoDB (dynalite) frozen (SIGSTOP) for less than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-short") }, stores: []string{StoreDynamoDB}},
		{id: "10c", name: "DynamoDB (dynalite) frozen for more than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-long") }, stores: []string{StoreDynamoDB}},
		{id: "10d", name: "DynamoDB (dynalite) frozen for 60 s on serve's default flags: no refusal", run: func(e *Env) error { return tableOutage(e, time.Minute) }, stores: []string{StoreDynamoDB}, shortOn: []string{}},
		{id: "10e", name: "DynamoDB (dynalite) frozen for 4 minutes on serve's default flags: no refusal", run: func(e *Env) error { return tableOutage(e, 4*time.Minute) }, stores: []string{StoreDynamoDB}, shortOn: []string{}},
		{id: "10f", name: "DynamoDB (dynalite) frozen for 5 min 30 s, past the lease, on serve's default flags: fenced before the expiry", run: func(e *Env) error { return tableOutage(e, 5*time.Minute+30*time.Second) }, stores: []string{StoreDynamoDB}, shortOn: []string{}},
		{id: "11", name: "a lost region: region A (its etcd and every holder) SIGKILLed; Go clients fail over to region B, then come back", run: regionLoss, stores: etcdOnly},
		{id: "12a", name: "ZooKeeper killed (SIGKILL) past the self-fence, then started on its data", run: func(e *Env) error { return tableFault(e, "stop") }, stores: zkOnly},
		{id: "12b", name: "ZooKeeper frozen (SIGSTOP) for less than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-short") }, stores: zkOnly},
		{id: "12c", name: "ZooKeeper frozen for more than the self-fence", run: func(e *Env) error { return tableFault(e, "freeze-long") }, stores: zkOnly, shortOn: []string{}},
		{id: "12d", name: "ZooKeeper restored from a cold copy of its data, then raise-marks (the runbook's step)", run: func(e *Env) error { return tableFault(e, "restore") }, stores: zkOnly}, // short mode too: the test bound's restore window (scenarios_zookeeper.go)
		{id: "13a", name: "kube-apiserver killed (SIGKILL) past the self-fence, then started on its etcd", run: func(e *Env) error { return k8sFault(e, "stop") }, stores: k8sOnly},
		{id: "13b", name: "kube-apiserver frozen (SIGSTOP) for less than the self-fence", run: func(e *Env) error { return k8sFault(e, "freeze-short") }, stores: k8sOnly},
		{id: "13c", name: "kube-apiserver frozen for more than the self-fence", run: func(e *Env) error { return k8sFault(e, "freeze-long") }, stores: k8sOnly, shortOn: []string{}},
		{id: "13d", name: "etcd restored from a snapshot under kube-apiserver (resourceVersions repeat), then raise-marks (the runbook's step)", run: func(e *Env) error { return k8sFault(e, "restore") }, stores: k8sOnly}, // short mode too: the test bound's restore window
	}
}

// The former fixed lease timings of the scenarios that wait for a lease
// to expire: the production ratios (TTL : renewal : self-fence =
// 10 : 2 : 5) shortened. The suite's scenarios now draw theirs in fastBox
// (config.go), around these; the constants stay for a scenario that needs
// exactly them (and as fastBox's reference in its test).
const (
	fastTTL       = 3 * time.Second
	fastRenew     = 500 * time.Millisecond
	fastSelfFence = 1500 * time.Millisecond
)
