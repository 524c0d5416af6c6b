package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
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
)

// Stores lists the stores the suite runs on, in the order "-store all"
// runs them.
func Stores() []string { return []string{StoreEtcd, StorePostgres, StoreDynamoDB, StoreZooKeeper} }

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
	// socketOnly: the PostgreSQL cluster answers on its Unix socket only
	// (scenario 9d, between the restore and the operator's step).
	socketOnly bool
}

// startTableServers starts the servers of kind (postgres, dynamodb or
// zookeeper, whose server is no table's but fails as one does).
func startTableServers(ctx context.Context, kind string) (*tableServers, error) {
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
}

// addr is the TCP address the holders reach the store at: PostgreSQL's,
// ZooKeeper's, or the shim's in front of dynalite.
func (t *tableServers) addr() string {
	if t.pg != nil {
		return t.pg.Addr()
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
	}
	return lease.TableTimings()
}

// tableName is a scenario's lease table (on ZooKeeper, its path): fresh
// for every scenario of every run, so that no scenario reads another's
// leases.
func tableName(kind, scenario string) string {
	if kind == StoreZooKeeper {
		return fmt.Sprintf("/chaos-%d-s%s", os.Getpid(), scenario)
	}
	if kind == StoreDynamoDB {
		return fmt.Sprintf("chaos-%d-s%s", os.Getpid(), scenario)
	}
	return fmt.Sprintf("chaos_%d_s%s", os.Getpid(), scenario)
}

// createTable creates the scenario's lease table as "snowfence leases
// init" does: pgstore's Migrate, or dynamostore's CreateTable, which makes
// the lease table and its "<table>-journal". ZooKeeper's store makes its
// znodes as it needs them.
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
	}
	return nil
}

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

// tableBoundArgs are the flags that give a library holder (HolderMain)
// tableMaxSelfFence.
func (e *Env) tableBoundArgs() []string {
	if b := e.tableMaxSelfFence(); b > 0 {
		return []string{"--table-max-self-fence", b.String()}
	}
	return nil
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
	}
	var eps []string
	for _, a := range addrs {
		eps = append(eps, "http://"+a)
	}
	return []string{"--etcd", strings.Join(eps, ",")}
}

// storeEnv is the environment a service needs for the store: the table's
// test bound (tableMaxSelfFence), dynalite's credentials for the AWS SDK's
// default chain.
func (e *Env) storeEnv() []string {
	var env []string
	if b := e.tableMaxSelfFence(); b > 0 {
		env = append(env, testbound.EnvMaxSelfFence+"="+b.String())
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
	return t.dyn.Thaw()
}

// heal leaves the server running and reachable on TCP for the next
// scenario, whatever a failed one left it in.
func (t *tableServers) heal(ctx context.Context) {
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
