// Package etcdtest runs real etcd servers for tests across the repository:
// n-member clusters of embedded etcd (go.etcd.io/etcd/server/v3/embed) on
// loopback ports in the test's temporary directory, with handles to stop,
// restart and restore members, and an external etcd executable (Debian's
// /usr/bin/etcd) for interop tests.
//
// # Ports
//
// Ports are chosen by asking the kernel for free ones and closing them again,
// so another process may take one before etcd binds it. Start retries the
// whole cluster on fresh ports when a bind fails, which makes parallel test
// packages safe enough. Restart reuses a member's ports.
//
// # Logs
//
// The servers log nothing: embedded members use a no-op zap logger, and the
// external executable's output is kept and shown only if it fails to start.
//
// # Concurrency
//
// Call the methods of a Cluster from the test goroutine; they are not meant
// to race with each other. Clients they hand out are safe for concurrent use.
package etcdtest
