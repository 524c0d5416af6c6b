// Package node starts a complete snowfence holder in one call: a lease store
// (an embedded single-member etcd by default, or an etcd cluster, a
// PostgreSQL or a DynamoDB lease table, a ZooKeeper ensemble, or Kubernetes Lease objects), a lease.Keeper that claims a
// machine number from it, and a snowfence.Generator that mints on that
// number. It is the library's zero-configuration start, and what
// "snowfence serve" runs.
//
//	n, err := node.Start(ctx, node.Config{}) // embedded etcd in ./snowfence-data
//	id, err := n.Generator.Next(ctx)
//	defer n.Close(ctx)                     // releases the number, recording its mark
//
// # Stores
//
// Every store is opened the same way, by an Opener (Config.Open) that
// returns the store with the keeper timings that suit it:
//
//	node.Config{Open: node.EtcdCluster(etcdstore.ClientConfig{Endpoints: eps}, etcdstore.Config{})}
//	node.Config{Open: node.Postgres("postgres://…", pgstore.Config{})}
//	node.Config{Open: node.DynamoDB(dynamostore.ClientConfig{}, dynamostore.Config{})}
//	node.Config{Open: node.ZooKeeper([]string{"zk-1:2181", "zk-2:2181", "zk-3:2181"}, 0, zkstore.Config{})}
//	node.Config{Open: node.Kubernetes(k8sstore.Config{Namespace: "ids"}, restConfig)} // restConfig: rest.InClusterConfig() or a kubeconfig's
//	node.Config{Open: node.EmbeddedEtcd(embedetcd.Config{Dir: dir}, etcdstore.Config{})} // the default
//
// A store the caller opened itself goes in Config.Store instead.
//
// Start returns once the generator issues (and fails with
// lease.ErrNoFreeNumber when every number of the range is held); Launch
// returns at once, its keeper claiming in the background — as a spare
// while every number is held — and its generator refusing until then
// (WaitIssuing waits). Every claim's first grant waits
// out the store's notice window (8 s on etcd, 4 min 40 s on the lease tables
// and on ZooKeeper and Kubernetes, whose timings are the tables'; lease.Store.MaxNoticeWindow), the time any other holder still issuing on
// the number — after a restore of the store — needs to notice the claim.
//
// # The embedded etcd is unique only on its host
//
// The zero-configuration store is a single-member etcd in a directory of
// this host. Two hosts that each run the default share nothing: each leases
// machine numbers from its own etcd, both may hold number 5, and they mint
// the same IDs. Use it for one host only; a fleet on several hosts must
// point every holder at one store (EtcdCluster on a shared etcd cluster, a
// lease table, ZooKeeper, Kubernetes, or Config.Store). Start logs a warning saying so whenever it
// starts the embedded etcd.
//
// # Clock policy
//
// A generator that sets no clock policy gets snowfence.ClockRequire, which
// refuses an untrustworthy clock: IDs minted from a shared store are
// ordered against other hosts' IDs. On the embedded etcd that Start starts
// (one host, where that order means nothing) it gets ClockWarn instead,
// and Start logs EmbeddedClockNote saying so (EmbeddedClockDefault, in
// clockpolicy.go). A store passed in as Config.Store is taken to be shared.
//
// # Schedule, range and region
//
// Keeper.Schedule and Generator.Schedule must agree (either may be left
// zero to take the other's): snowfence.New refuses two different ones, and
// Start then closes the keeper, releasing any number it claimed meanwhile. The same
// goes for Keeper.Clock and Generator.Clock. Start refuses, before it claims
// anything, a
// machine range or region that a layout of the schedule in force from now
// on cannot hold — a region other than 0 under v1, which has no region
// bits, among them (snowfence.Schedule.CheckPlacement).
//
// node.go holds Config, Start, Launch and the Node; store.go the Opener of
// each store; clockpolicy.go the embedded etcd's clock policy. A holder that serves HTTP, as "snowfence serve" does, is
// package service, built on this one.
package node
