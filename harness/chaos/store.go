package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/harness/chaos/k8sproc"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// The lease stores the suite runs on (Options.Store).
const (
	// StoreEtcd: a three-member etcd cluster of the suite's own, fresh for
	// every scenario.
	StoreEtcd = "etcd"
	// StorePostgres: a PostgreSQL cluster of the suite's own (not the
	// oracle's), one fresh lease table per scenario.
	StorePostgres = "postgres"
	// StoreDynamoDB: a dynalite of the suite's own with its data on disk,
	// behind the shim that makes it answer a failed condition as DynamoDB
	// does (package internal/testkit/dynashim); one fresh lease table (and its
	// journal table) per scenario.
	StoreDynamoDB = "dynamodb"
	// StoreZooKeeper: a standalone ZooKeeper server of the suite's own
	// (internal/testkit/storeproc), one fresh path per scenario. Its
	// leases are a table's (zkstore.Timings: lease.TableTimings), so it
	// runs the table scenarios' shapes, with the tables' short-mode bound.
	StoreZooKeeper = "zookeeper"
	// StoreKubernetes: a kube-apiserver of the suite's own over a
	// one-member etcd, both processes (package k8sproc), one fresh
	// namespace per scenario whose holders reach it as a service account
	// allowed only get, list, create and patch on its leases. Its leases
	// are a table's too (k8sstore.Timings: lease.TableTimings).
	StoreKubernetes = "kubernetes"
)

// Stores lists the stores the suite runs on, in the order "-store all"
// runs them.
func Stores() []string {
	return []string{StoreEtcd, StorePostgres, StoreDynamoDB, StoreZooKeeper, StoreKubernetes}
}

// dynamoCreds are the static credentials every process gives dynalite,
// which takes any.
const dynamoCreds = "snowfence-chaos"

// tableServers are the servers of a lease-table store, started once for a
// run: every scenario makes its own table on them.
type tableServers struct {
	kind string
	pg   *storeproc.Postgres
	dyn  *storeproc.Dynalite
	shim *dynashim.Shim
	zk   *storeproc.ZooKeeper
	k8s  *k8sproc.Server
	// socketOnly: the PostgreSQL cluster answers on its Unix socket only
	// (scenario 9d, between the restore and the operator's step).
	socketOnly bool
}

// startTableServers starts the servers of kind (postgres, dynamodb,
// zookeeper or kubernetes, whose servers are no table's but fail as one
// does); kubernetes' etcd member runs as opts.Command's member role, its
// data in opts.Dir.
func startTableServers(ctx context.Context, kind string, opts Options) (*tableServers, error) {
	t := &tableServers{kind: kind}
	var err error
	switch kind {
	case StorePostgres:
		t.pg, err = storeproc.StartPostgres(ctx)
	case StoreDynamoDB:
		if t.dyn, err = storeproc.StartDynalite(ctx); err == nil {
			if t.shim, err = dynashim.Start(t.dyn.URL()); err != nil {
				t.dyn.Close()
			}
		}
	case StoreZooKeeper:
		t.zk, err = storeproc.StartZooKeeper(ctx)
	case StoreKubernetes:
		t.k8s, err = k8sproc.Start(ctx, k8sproc.Config{
			Dir:         filepath.Join(opts.Dir, StoreKubernetes, "servers"),
			EtcdCommand: func(args ...string) *exec.Cmd { return opts.Command(RoleEtcdMember, args...) },
			Stderr:      &prefixWriter{w: opts.Log, prefix: "kubernetes etcd: "},
		})
	default:
		err = fmt.Errorf("chaos: store %q is not a lease table", kind)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// close stops the servers.
func (t *tableServers) close() {
	if t.shim != nil {
		t.shim.Close()
	}
	if t.dyn != nil {
		t.dyn.Close()
	}
	if t.pg != nil {
		t.pg.Close()
	}
	if t.zk != nil {
		t.zk.Close()
	}
	if t.k8s != nil {
		t.k8s.Close()
	}
}

// addr is the TCP address the holders reach the store at: PostgreSQL's,
// ZooKeeper's, the relay's in front of kube-apiserver, or the shim's in
// front of dynalite.
func (t *tableServers) addr() string {
	if t.pg != nil {
		return t.pg.Addr()
	}
	if t.k8s != nil {
		return t.k8s.Addr()
	}
	if t.zk != nil {
		return t.zk.Addr()
	}
	return strings.TrimPrefix(t.shim.URL(), "http://")
}

// storeTimings are the timings the store's holders take when a scenario
// sets none: etcdstore.Timings, zkstore.Timings, or lease.TableTimings on
// a table.
func storeTimings(kind string) lease.Timings {
	switch kind {
	case StoreEtcd:
		return etcdstore.Timings()
	case StoreZooKeeper:
		return zkstore.Timings()
	case StoreKubernetes:
		return k8sstore.Timings()
	}
	return lease.TableTimings()
}

// tableName is a scenario's lease table (on ZooKeeper, its path; on
// Kubernetes, its namespace): fresh for every scenario of every run, so
// that no scenario reads another's leases.
func tableName(kind, scenario string) string {
	if kind == StoreZooKeeper {
		return fmt.Sprintf("/chaos-%d-s%s", os.Getpid(), scenario)
	}
	if kind == StoreDynamoDB || kind == StoreKubernetes {
		return fmt.Sprintf("chaos-%d-s%s", os.Getpid(), scenario)
	}
	return fmt.Sprintf("chaos_%d_s%s", os.Getpid(), scenario)
}

// createTable creates the scenario's lease table as "snowfence leases
// init" does: pgstore's Migrate, or dynamostore's CreateTable, which makes
// the lease table and its "<table>-journal". ZooKeeper's store makes its
// znodes as it needs them. On Kubernetes the scenario's namespace is the
// table: the operator makes it, the holders' service account and its Role
// in it, and the kubeconfig the holders read (Env.kubeconfig); k8sstore
// makes its Lease objects as it needs them.
func (e *Env) createTable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch e.opts.Store {
	case StorePostgres:
		s, err := pgstore.Connect(ctx, e.tables.pg.URL(), pgstore.Config{Table: e.table})
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Migrate(ctx)
	case StoreDynamoDB:
		s, err := dynamostore.Connect(ctx, dynamoClient(e.tables.shim.URL()), dynamostore.Config{Table: e.table})
		if err != nil {
			return err
		}
		defer s.Close()
		return s.CreateTable(ctx)
	case StoreKubernetes:
		return e.tables.k8s.Restricted(ctx, e.table, e.kubeconfig())
	}
	return nil
}

// kubeconfig is the scenario's holders' kubeconfig (kubernetes).
func (e *Env) kubeconfig() string { return filepath.Join(e.dir, "kubeconfig") }

// dynamoClient reaches dynalite (through the shim) at endpoint.
func dynamoClient(endpoint string) dynamostore.ClientConfig {
	return dynamostore.ClientConfig{Endpoint: endpoint, AWSRegion: "us-east-1", AccessKeyID: dynamoCreds, SecretAccessKey: dynamoCreds}
}

// storeTargets are the TCP addresses of the store that a holder dials:
// the etcd members' client addresses, PostgreSQL's, or the shim's.
func (e *Env) storeTargets() []string {
	if e.tables != nil {
		return []string{e.tables.addr()}
	}
	var out []string
	for _, ep := range e.cluster.Endpoints() {
		out = append(out, strings.TrimPrefix(ep, "http://"))
	}
	return out
}

// shortTableMaxSelfFence is the tables' test bound (internal/testbound:
// the environment variable a snowfence binary built with the
// snowfence_testbound tag reads, the library holder's
// --table-max-self-fence) of
// every holder on a lease table in the short mode: the longest self-fence
// the short mode's boxes draw there (tableBox and netBox: 6 s; fastBox
// 3.5 s). A claim's first grant then waits its notice window, 7.6 s, in
// proportion to the timings scaled down from the tables' own, rather than
// the 4 min 40 s of the tables' default bound; the draws are checked
// against it (drawer.notice), so a box drawing longer self-fences
// (tableSteadyBox, of the long mode) is refused in the short mode. The
// long mode runs the tables' default bound.
const shortTableMaxSelfFence = 6 * time.Second

// tableMaxSelfFence is the test bound every holder of the scenario's lease
// table runs with (0: the store's default).
func (e *Env) tableMaxSelfFence() time.Duration {
	if e.short && e.opts.Store != StoreEtcd && !e.storeDefaults {
		return shortTableMaxSelfFence
	}
	return 0
}

// shortTableMaxReserve is the reserve of the short mode's test bound on
// ZooKeeper and Kubernetes (internal/testbound: Bound.WithMaxReserve, the environment
// variable testbound.EnvMaxReserve, the library holder's
// --table-max-reserve): the longest Reserve — the keeper's default, the
// lease TTL — the short mode's boxes draw on a table (tableBox and netBox:
// 12 s; fastBox 4 s). With shortTableMaxSelfFence it makes zkstore's
// restore window lease.RestoreWindow(12 s, 6 s) = 14.2 s, not 6 min: the
// restore floor, and the shortest --to raise-marks accepts, so that 12d
// (the restore drill) runs in the short mode. The draws are checked
// against that window (drawer.window), so a box reserving longer is
// refused there. Only zkstore and k8sstore honour a reserve: PostgreSQL and DynamoDB
// keep their 6 min, and their restores (9d) the long mode.
const shortTableMaxReserve = 12 * time.Second

// tableMaxReserve is the reserve of the test bound every holder of the
// scenario's ZooKeeper or Kubernetes store runs with (0: none, the store's
// own restore window).
func (e *Env) tableMaxReserve() time.Duration {
	if (e.opts.Store == StoreZooKeeper || e.opts.Store == StoreKubernetes) && e.tableMaxSelfFence() > 0 {
		return shortTableMaxReserve
	}
	return 0
}

// restoreWindow is the store's MaxRestoreWindow for the scenario's
// holders: the test bound's (tableMaxReserve), or the store's constant.
func (e *Env) restoreWindow() time.Duration {
	if r := e.tableMaxReserve(); r > 0 {
		return lease.RestoreWindow(r, e.tableMaxSelfFence())
	}
	return maxRestoreWindow(e.opts.Store)
}

// tableBoundArgs are the flags that give a library holder (HolderMain)
// tableMaxSelfFence and tableMaxReserve.
func (e *Env) tableBoundArgs() []string {
	var args []string
	if b := e.tableMaxSelfFence(); b > 0 {
		args = append(args, "--table-max-self-fence", b.String())
	}
	if r := e.tableMaxReserve(); r > 0 {
		args = append(args, "--table-max-reserve", r.String())
	}
	return args
}

// serveStoreArgs are the flags that point snowfence serve at the store,
// reached at addrs (nil: storeTargets), as cmd/snowfence's store flags
// spell them.
func (e *Env) serveStoreArgs(addrs []string) []string {
	if addrs == nil {
		addrs = e.storeTargets()
	}
	switch e.opts.Store {
	case StorePostgres:
		return []string{"--lease-store", "postgres", "--postgres-url", e.tables.pg.URLAt(addrs[0]), "--postgres-table", e.table}
	case StoreDynamoDB:
		return []string{"--lease-store", "dynamodb", "--dynamodb-endpoint", "http://" + addrs[0], "--dynamodb-table", e.table, "--aws-region", "us-east-1"}
	case StoreZooKeeper:
		return []string{"--lease-store", "zookeeper", "--zk-servers", strings.Join(addrs, ","), "--zk-path", e.table}
	}
	var eps []string
	for _, a := range addrs {
		eps = append(eps, "http://"+a)
	}
	return []string{"--etcd-endpoints", strings.Join(eps, ",")}
}

// holderStoreArgs are the flags that point a library holder (HolderMain)
// at the store, reached at addrs (nil: storeTargets).
func (e *Env) holderStoreArgs(addrs []string) []string {
	if addrs == nil {
		addrs = e.storeTargets()
	}
	switch e.opts.Store {
	case StorePostgres:
		return append([]string{"--lease-store", "postgres", "--postgres-url", e.tables.pg.URLAt(addrs[0]), "--table", e.table}, e.tableBoundArgs()...)
	case StoreDynamoDB:
		return append([]string{"--lease-store", "dynamodb", "--dynamodb-endpoint", "http://" + addrs[0], "--table", e.table}, e.tableBoundArgs()...)
	case StoreZooKeeper:
		return append([]string{"--lease-store", "zookeeper", "--zk-servers", strings.Join(addrs, ","), "--table", e.table}, e.tableBoundArgs()...)
	case StoreKubernetes:
		return append([]string{"--lease-store", "kubernetes", "--kubeconfig", e.kubeconfig(), "--k8s-namespace", e.table,
			"--k8s-server", "https://" + addrs[0]}, e.tableBoundArgs()...)
	}
	var eps []string
	for _, a := range addrs {
		eps = append(eps, "http://"+a)
	}
	return []string{"--etcd", strings.Join(eps, ",")}
}

// storeEnv is the environment a service (or the CLI) needs for the store:
// the table's test bound (tableMaxSelfFence, tableMaxReserve), dynalite's
// credentials for the AWS SDK's default chain.
func (e *Env) storeEnv() []string {
	var env []string
	if b := e.tableMaxSelfFence(); b > 0 {
		env = append(env, testbound.EnvMaxSelfFence+"="+b.String())
	}
	if r := e.tableMaxReserve(); r > 0 {
		env = append(env, testbound.EnvMaxReserve+"="+r.String())
	}
	if e.opts.Store == StoreDynamoDB {
		env = append(env, "AWS_ACCESS_KEY_ID="+dynamoCreds, "AWS_SECRET_ACCESS_KEY="+dynamoCreds)
	}
	return env
}

// what names the table's server in the log and the report.
func (t *tableServers) what() string {
	if t.pg != nil {
		return "PostgreSQL"
	}
	if t.zk != nil {
		return "ZooKeeper"
	}
	if t.k8s != nil {
		return "kube-apiserver"
	}
	return "dynalite"
}

// stop crashes the server: pg_ctl stop -m immediate, or SIGKILL.
func (t *tableServers) stop(ctx context.Context) error {
	if t.pg != nil {
		return t.pg.StopImmediate(ctx)
	}
	if t.zk != nil {
		return t.zk.Kill()
	}
	if t.k8s != nil {
		return t.k8s.Kill()
	}
	return t.dyn.Kill()
}

// start starts the stopped server on its port and data.
func (t *tableServers) start(ctx context.Context) error {
	if t.pg != nil {
		return t.pg.Start(ctx, false)
	}
	if t.zk != nil {
		return t.zk.Start(ctx)
	}
	if t.k8s != nil {
		return t.k8s.StartAPIServer(ctx)
	}
	return t.dyn.Start(ctx)
}

// freeze stops every process of the server (SIGSTOP).
func (t *tableServers) freeze() error {
	if t.pg != nil {
		return t.pg.Freeze()
	}
	if t.zk != nil {
		return t.zk.Freeze()
	}
	if t.k8s != nil {
		return t.k8s.Freeze()
	}
	return t.dyn.Freeze()
}

// thaw resumes a frozen server.
func (t *tableServers) thaw() error {
	if t.pg != nil {
		return t.pg.Thaw()
	}
	if t.zk != nil {
		return t.zk.Thaw()
	}
	if t.k8s != nil {
		return t.k8s.Thaw()
	}
	return t.dyn.Thaw()
}

// heal leaves the server running and reachable on TCP for the next
// scenario, whatever a failed one left it in.
func (t *tableServers) heal(ctx context.Context) {
	if t.k8s != nil {
		t.k8s.Heal(ctx)
		return
	}
	t.thaw()
	if t.pg != nil {
		if t.socketOnly {
			t.pg.Restart(ctx)
			t.socketOnly = false
		}
		t.pg.Start(ctx, false) // fails harmlessly when it runs
		return
	}
	if t.zk != nil {
		if t.zk.Aside() {
			t.zk.Reopen(ctx) // a restore's operator step did not end
			return
		}
		t.zk.Start(ctx) // fails harmlessly when it runs
		return
	}
	t.dyn.Start(ctx) // likewise
}
