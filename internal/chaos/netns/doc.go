// Package netns cuts a process off from etcd while it keeps serving its
// callers: scenario 8 of the fault-injection suite. The holder under test
// runs in a network namespace of its own, which has nothing but a loopback
// interface, and the harness in the host namespace forwards the only paths
// in and out of it through proxies it can partition:
//
//	holder ──▶ ns 127.0.0.1:P ──Proxy──▶ host 127.0.0.1:<etcd client port>
//	caller ──▶ host 127.0.0.1:Q ──Proxy──▶ ns 127.0.0.1:<holder HTTP port>
//
// Cutting the etcd proxies leaves the holder alone with its callers. Every
// byte travels over a loopback interface, of one namespace or the other, so
// no virtual Ethernet pair, address or route is needed.
//
// # Namespaces
//
// New creates a named namespace with `ip netns add` and brings its loopback
// interface up. Command starts a process inside it (`ip netns exec`, which
// execs the command, so the process's PID is the command's own). Listen and
// DialContext create sockets inside it from the harness process: a fresh
// goroutine locks itself to an OS thread, switches that thread into the
// namespace with setns(2), creates the socket and switches back. A socket
// keeps the namespace it was created in, so the listener or connection works
// from any goroutine afterwards. If the thread cannot be switched back, the
// goroutine ends still locked and the Go runtime discards the thread, so no
// thread of the process is ever left in the wrong namespace; new threads are
// never cloned from a locked one (Go 1.10 and later). Addresses must be
// literal IPs: a name would run the resolver inside the namespace.
//
// Names start with Prefix ("sfchaos-"), and New, Close and Cleanup touch no
// other namespace, so a mistaken name cannot delete one that belongs to
// something else. New deletes a namespace of the same name left by a crashed
// run first; Cleanup deletes every leftover whose name starts with a prefix.
// Deleting a namespace does not end the processes inside it.
//
// # Partitions
//
// A Proxy forwards every connection accepted on its listener to a
// connection its dial function opens. Cut makes it a black hole, the way a
// network partition looks to both ends: existing connections stay open but
// no byte crosses in either direction, not even a FIN or a reset, and new
// connections are accepted and held without being forwarded. Heal ends the
// partition: the connections held through it are closed, as TCP gives up on
// them after a long partition, and new connections are forwarded again.
//
// # Without namespaces
//
// Network namespaces need Linux, root (CAP_SYS_ADMIN) and the ip command.
// Available reports whether they work here, or why not. Where they do not,
// Host returns the host namespace behind the same methods, so a suite can
// run the same proxies there and report which mode it used; the holder can
// then reach etcd around the proxies, so only the namespaced mode proves
// that a cut holder is really cut off.
//
// # Concurrency
//
// The methods of NS and Proxy are safe for concurrent use.
package netns
