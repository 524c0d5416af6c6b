package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// storeFlags are the options that say where the leases live; serve,
// leases and schedule share them.
type storeFlags struct {
	kind                        string
	postgresURL, postgresTable  string
	dynamoTable, dynamoEndpoint string
	awsRegion                   string
	endpoints                   string
	cert, key, ca               string
	username, password          string
	prefix                      string
	dataDir                     string
	zkServers, zkPath, zkDigest string
	zkSessionTimeout            time.Duration
	k8s                         k8sFlags
	// regionText is --region: a region's name or number. region is its
	// number once resolved (resolveRegion; serve resolves it itself).
	regionText  string
	region      int
	dialTimeout time.Duration
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "lease-store", "etcd", "where machine-number leases live: etcd, postgres, dynamodb, zookeeper or kubernetes")
	fs.StringVar(&f.kind, "store", "etcd", "short for --lease-store")
	fs.StringVar(&f.postgresURL, "postgres-url", "", "PostgreSQL URL for --lease-store postgres (postgres://user:pass@host:5432/db; percent-encode @ / ? # : in the password). "+
		"A flag's value is visible to every user of the host (ps): give the URL in SNOWFENCE_POSTGRES_URL instead, or leave the password out and use PGPASSFILE")
	fs.StringVar(&f.postgresTable, "postgres-table", pgstore.DefaultTable, "lease table for --lease-store postgres")
	fs.StringVar(&f.dynamoTable, "dynamodb-table", dynamostore.DefaultTable, "lease table for --lease-store dynamodb")
	fs.StringVar(&f.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint URL override (a local server such as dynalite); credentials come from the AWS SDK's usual chain (AWS_ACCESS_KEY_ID, …)")
	fs.StringVar(&f.awsRegion, "aws-region", "", "AWS region for --lease-store dynamodb (default: the SDK's, e.g. AWS_REGION)")
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", "comma-separated client URLs of an external etcd cluster (empty: the embedded etcd)")
	fs.StringVar(&f.cert, "etcd-cert", "", "client certificate (PEM) for etcd TLS")
	fs.StringVar(&f.key, "etcd-key", "", "client key (PEM) for etcd TLS")
	fs.StringVar(&f.ca, "etcd-ca", "", "CA certificate (PEM) that signed etcd's server certificates")
	fs.StringVar(&f.username, "etcd-username", "", "etcd user, if etcd has auth enabled")
	fs.StringVar(&f.password, "etcd-password", "", "etcd password; a flag's value is visible to every user of the host (ps): give it in SNOWFENCE_ETCD_PASSWORD instead")
	fs.StringVar(&f.prefix, "etcd-prefix", etcdstore.DefaultPrefix, "key prefix of the lease keys in etcd")
	fs.StringVar(&f.dataDir, "data-dir", embedetcd.DefaultDir, "data directory of the embedded etcd")
	fs.StringVar(&f.zkServers, "zk-servers", "", "comma-separated host:port of the ZooKeeper ensemble's servers for --lease-store zookeeper")
	fs.DurationVar(&f.zkSessionTimeout, "zk-session-timeout", 10*time.Second, "ZooKeeper session timeout for --lease-store zookeeper (the session only carries requests: no lease depends on it)")
	fs.StringVar(&f.zkPath, "zk-path", zkstore.DefaultPath, "znode under which --lease-store zookeeper keeps the leases; every holder of a fleet must give the same")
	fs.StringVar(&f.zkDigest, "zk-digest", "", "user:password of the fleet's ZooKeeper digest credentials: the session authenticates with them and every znode the store creates is open to that user only (empty: znodes open to anyone who reaches the servers). "+
		"A flag's value is visible to every user of the host (ps): give it in SNOWFENCE_ZK_DIGEST instead")
	f.k8s.register(fs)
	fs.StringVar(&f.regionText, "region", "0", "region: its name in the region registry (snowfence regions list), or its number: 0 while v1 (no region bits) is in force; 0-7 under v2")
	fs.DurationVar(&f.dialTimeout, "etcd-dial-timeout", 5*time.Second, "how long to wait for etcd to answer at start")
}

// clientConfig returns the external cluster's client configuration, with no
// endpoints when the embedded etcd is meant.
func (f *storeFlags) clientConfig() (etcdstore.ClientConfig, error) {
	cc := etcdstore.ClientConfig{Username: f.username, Password: f.password, DialTimeout: f.dialTimeout}
	for _, ep := range strings.Split(f.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			cc.Endpoints = append(cc.Endpoints, ep)
		}
	}
	if f.cert != "" || f.key != "" || f.ca != "" {
		if (f.cert == "") != (f.key == "") {
			return cc, usagef("--etcd-cert and --etcd-key go together")
		}
		tlsCfg, err := etcdstore.TLSConfig(f.cert, f.key, f.ca)
		if err != nil {
			return cc, err
		}
		cc.TLS = tlsCfg
	}
	return cc, nil
}

func (f *storeFlags) storeConfig() etcdstore.Config {
	return etcdstore.Config{Prefix: f.prefix, Region: f.region}
}

// pgConfig is the PostgreSQL store's configuration.
func (f *storeFlags) pgConfig(log *slog.Logger) pgstore.Config {
	return pgstore.Config{Table: f.postgresTable, Region: f.region, Logger: log, TestBound: testBound}
}

// dynamoClient says how to reach DynamoDB.
func (f *storeFlags) dynamoClient() dynamostore.ClientConfig {
	return dynamostore.ClientConfig{Endpoint: f.dynamoEndpoint, AWSRegion: f.awsRegion}
}

// dynamoConfig is the DynamoDB store's configuration.
func (f *storeFlags) dynamoConfig(log *slog.Logger) dynamostore.Config {
	return dynamostore.Config{Table: f.dynamoTable, Region: f.region, Logger: log, TestBound: testBound}
}

// zkServerList is --zk-servers as a list, blanks dropped.
func (f *storeFlags) zkServerList() []string {
	var out []string
	for _, s := range strings.Split(f.zkServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// zkConfig is the ZooKeeper store's configuration (check has accepted
// --zk-digest).
func (f *storeFlags) zkConfig(log *slog.Logger) zkstore.Config {
	cfg := zkstore.Config{Path: f.zkPath, Region: f.region, Logger: log, TestBound: testBound}
	if user, password, ok := strings.Cut(f.zkDigest, ":"); ok {
		cfg = cfg.WithDigest(user, password)
	}
	return cfg
}

// A storeKind is one of the lease stores --lease-store chooses from, and
// what the commands need to know of it.
type storeKind struct {
	name string
	// table: a lease table, which "leases init" creates. ZooKeeper is not
	// one (its store creates its znodes as it needs them), though its
	// timings are the tables'.
	table bool
	// timings suit the store: serve's timing flags left unset take them.
	timings lease.Timings
	// open says how serve's node opens the store: cc is the external etcd
	// cluster (no endpoints: the embedded etcd, configured as embedded
	// says).
	open func(f *storeFlags, cc etcdstore.ClientConfig, embedded embedetcd.Config) node.Opener
}

// storeKinds are the lease stores, the default (etcd) first.
func storeKinds() []storeKind {
	return []storeKind{
		{name: "etcd", timings: etcdstore.Timings(), open: func(f *storeFlags, cc etcdstore.ClientConfig, embedded embedetcd.Config) node.Opener {
			if len(cc.Endpoints) == 0 {
				return node.EmbeddedEtcd(embedded, f.storeConfig())
			}
			return node.EtcdCluster(cc, f.storeConfig())
		}},
		{name: "postgres", table: true, timings: pgstore.Timings(), open: func(f *storeFlags, _ etcdstore.ClientConfig, _ embedetcd.Config) node.Opener {
			return node.Postgres(f.postgresURL, f.pgConfig(nil))
		}},
		{name: "dynamodb", table: true, timings: dynamostore.Timings(), open: func(f *storeFlags, _ etcdstore.ClientConfig, _ embedetcd.Config) node.Opener {
			return node.DynamoDB(f.dynamoClient(), f.dynamoConfig(nil))
		}},
		{name: "zookeeper", timings: zkstore.Timings(), open: func(f *storeFlags, _ etcdstore.ClientConfig, _ embedetcd.Config) node.Opener {
			return node.ZooKeeper(f.zkServerList(), f.zkSessionTimeout, f.zkConfig(nil))
		}},
		{name: "kubernetes", timings: k8sstore.Timings(), open: func(f *storeFlags, _ etcdstore.ClientConfig, _ embedetcd.Config) node.Opener {
			return node.Kubernetes(f.k8s.config(f.region, nil), f.k8s.rest)
		}},
	}
}

// storeKind returns the store the flags choose (check has accepted them).
func (f *storeFlags) storeKind() storeKind {
	kinds := storeKinds()
	for _, k := range kinds {
		if k.name == f.kind {
			return k
		}
	}
	return kinds[0]
}

// isTable reports a lease-table store (PostgreSQL or DynamoDB).
func (f *storeFlags) isTable() bool { return f.storeKind().table }

// check validates the store choice.
func (f *storeFlags) check() error {
	var names []string
	for _, k := range storeKinds() {
		names = append(names, k.name)
	}
	if !slices.Contains(names, f.kind) {
		return usagef("--lease-store %q: use %s or %s", f.kind, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	}
	if f.kind == "postgres" && f.postgresURL == "" {
		return usagef("--lease-store postgres needs --postgres-url (or SNOWFENCE_POSTGRES_URL)")
	}
	// A store's address given with another --lease-store is most likely
	// that --lease-store forgotten: the holder would lease from another
	// store than its fleet's (on the default, an embedded etcd of its own)
	// and mint the fleet's IDs again.
	for _, a := range []struct{ flag, kind, value string }{
		{"etcd-endpoints", "etcd", f.endpoints},
		{"zk-servers", "zookeeper", f.zkServers},
		{"postgres-url", "postgres", f.postgresURL},
		{"dynamodb-endpoint", "dynamodb", f.dynamoEndpoint},
		{"aws-region", "dynamodb", f.awsRegion},
	} {
		if a.value != "" && f.kind != a.kind {
			return usagef("--%s (%s) is given but --lease-store is %s: pass --lease-store %s (SNOWFENCE_LEASE_STORE=%s), or drop --%s",
				a.flag, envName(a.flag), f.kind, a.kind, a.kind, a.flag)
		}
	}
	if f.kind != "kubernetes" && f.k8s.given() {
		return usagef("--k8s-namespace, --k8s-prefix or --kubeconfig (SNOWFENCE_K8S_NAMESPACE, SNOWFENCE_K8S_PREFIX, SNOWFENCE_KUBECONFIG) is given "+
			"but --lease-store is %s: pass --lease-store kubernetes (SNOWFENCE_LEASE_STORE=kubernetes), or drop them", f.kind)
	}
	switch f.kind {
	case "zookeeper":
		return f.checkZooKeeper()
	case "kubernetes":
		return f.k8s.check()
	}
	return nil
}

// checkZooKeeper refuses ZooKeeper flags that would point a holder at no
// ensemble, or at a path or credentials the store cannot take.
func (f *storeFlags) checkZooKeeper() error {
	if len(f.zkServerList()) == 0 {
		return usagef("--lease-store zookeeper needs --zk-servers (or SNOWFENCE_ZK_SERVERS): host:port of the ensemble's servers, comma-separated")
	}
	if f.zkSessionTimeout <= 0 {
		return usagef("--zk-session-timeout %v: give a positive duration such as 10s", f.zkSessionTimeout)
	}
	if f.zkDigest != "" {
		if user, password, ok := strings.Cut(f.zkDigest, ":"); !ok || user == "" || password == "" {
			return usagef("--zk-digest (SNOWFENCE_ZK_DIGEST): give user:password, both non-empty")
		}
	}
	if err := f.zkConfig(nil).Check(); err != nil {
		return usageError{err}
	}
	return nil
}

// tableStore opens the PostgreSQL or DynamoDB store, and returns it with the
// function that creates its table; the caller closes it.
func (f *storeFlags) tableStore(ctx context.Context, log *slog.Logger) (lease.Admin, func(context.Context) error, error) {
	switch f.kind {
	case "postgres":
		s, err := pgstore.Connect(ctx, f.postgresURL, f.pgConfig(log))
		if err != nil {
			return nil, nil, err
		}
		return s, s.Migrate, nil
	case "dynamodb":
		s, err := dynamostore.Connect(ctx, f.dynamoClient(), f.dynamoConfig(log))
		if err != nil {
			return nil, nil, err
		}
		return s, s.CreateTable, nil
	}
	return nil, nil, usagef("--lease-store %q is not a lease table", f.kind)
}

// connect opens the lease store for an operator command: a lease table, a
// ZooKeeper ensemble, Kubernetes, the external etcd cluster, or the embedded etcd of a snowfence serve running
// on this machine (found through the client-url file in its data
// directory).
func (f *storeFlags) connect(ctx context.Context) (lease.Admin, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if err := f.resolveRegion(ctx); err != nil {
		return nil, err
	}
	return f.connectRegion(ctx)
}

// connectRegion is connect for the region number in f.region.
func (f *storeFlags) connectRegion(ctx context.Context) (lease.Admin, error) {
	if f.isTable() {
		s, _, err := f.tableStore(ctx, nil)
		return s, err
	}
	switch f.kind {
	case "zookeeper":
		return f.zkAdmin()
	case "kubernetes":
		return f.k8sAdmin(ctx)
	}
	cc, err := f.clientConfig()
	if err != nil {
		return nil, err
	}
	if len(cc.Endpoints) == 0 {
		url, err := embedetcd.ReadClientURL(f.dataDir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("no etcd to talk to: pass --etcd-endpoints, or run this next to a running \"snowfence serve\" (its embedded etcd records its address in %s)", f.dataDir)
			}
			return nil, err
		}
		cc.Endpoints = []string{url}
	}
	return etcdstore.Connect(ctx, cc, f.storeConfig())
}

// zkAdmin opens the ZooKeeper store for an operator command.
func (f *storeFlags) zkAdmin() (lease.Admin, error) {
	s, err := zkstore.Connect(f.zkServerList(), f.zkSessionTimeout, f.zkConfig(nil))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// k8sAdmin opens the Kubernetes store for an operator command (check has
// resolved the namespace and the client configuration).
func (f *storeFlags) k8sAdmin(ctx context.Context) (lease.Admin, error) {
	s, err := k8sstore.Open(ctx, f.k8s.config(f.region, nil), f.k8s.rest)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// resolveRegion sets f.region from --region for an operator command: a
// number is taken as it is; a name is looked up in the region registry of
// the store (retired regions too: an operator may look at their leases).
func (f *storeFlags) resolveRegion(ctx context.Context) error {
	n, err := strconv.Atoi(f.regionText)
	if err == nil {
		if n < 0 {
			return usagef("--region %d: region numbers are not negative", n)
		}
		f.region = n
		return nil
	}
	f.region = 0 // the registry is one per store, beside every region's leases
	s, err := f.connectRegion(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	reg, err := s.Registry(ctx)
	if err != nil {
		return err
	}
	g, ok := reg.Named(f.regionText)
	if !ok {
		return fmt.Errorf("--region %q: %w: not in the store's region registry (version %d); list the regions with snowfence regions list", f.regionText, registry.ErrUnknownRegion, reg.Version)
	}
	f.region = g.Number
	return nil
}
