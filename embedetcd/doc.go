// Package embedetcd runs a single-member etcd server inside the process, so
// that one host can lease machine numbers with no etcd to install: it is the
// store behind a zero-configuration "snowfence serve" and node.Start. It is
// the only package of snowfence that imports the etcd server; etcdstore,
// which keeps the leases, needs only the client.
//
//	srv, err := embedetcd.Start(ctx, embedetcd.Config{}) // data in ./snowfence-data
//	defer srv.Close()                                   // after every store on it
//	cli, err := srv.Client(ctx)
//	defer cli.Close()
//	store, err := etcdstore.New(cli, etcdstore.Config{})
//	keeper, err := lease.StartKeeper(ctx, lease.KeeperConfig{Store: store})
//	err = keeper.Claimed(ctx) // it claims in the background: wait for a number
//
// The store's own timings are etcd's, which are the keeper's defaults
// (etcdstore.Timings).
//
// # One host only
//
// Machine numbers are unique only among the holders that lease them from
// one store. Two hosts that each run an embedded etcd share nothing: each
// leases from its own, both may hold number 5, and both mint the same IDs.
// Use an embedded etcd for the holders of one host only (they reach it
// through Server.Endpoints, or the client-url file below); a fleet on
// several hosts points every holder at one shared etcd cluster
// (etcdstore.Open) or one lease table (pgstore, dynamostore). Whoever
// starts one should say so where an operator sees it, as node.Start and
// "snowfence serve" do.
//
// # The data directory
//
// Keep the data directory (Config.Dir): the marks in it are what keeps a
// restarted holder from repeating timestamps it issued before. While the
// server runs it holds an exclusive lock on <Dir>/snowfence.lock, so a
// second server on the same directory fails at once with ErrDirInUse rather
// than waiting on etcd's own lock, and it keeps its client URL in
// <Dir>/client-url (ClientURLFile, ReadClientURL) for other processes of
// the host, removing it on a clean Close.
//
// Beside the directory, not in it, the holders keep their high-water mark
// (Config.HighWaterFile, Dir + ".highwater" by default; Server.HighWater,
// which node.EmbeddedEtcd gives the Node's keeper): a restore of the
// directory from a backup cannot take it back, and a restarted holder
// issues above it even with its host's clock behind the last ID issued.
// Keep it out of the directory's backups. A directory that holds etcd data
// with no file beside it (restored or copied without it, or made before
// the file was kept), or a corrupt file, refuses the keeper's start until
// Config.HighWaterAt sets the mark (highwater.go).
//
// The server listens where Config.ClientURL says, with no TLS and no
// authentication: keep it on loopback.
package embedetcd
