// Package netns puts a process in a network namespace of its own and cuts
// or degrades its paths, for scenarios 8a–8c of the fault-injection suite.
//
// # Virtual Ethernet pairs
//
// AddVeth joins a namespace to the host namespace by a veth pair on a
// private /30, and faults are the kernel's: Veth.Down takes the host end's
// link down (SYNs and segments are dropped either way, as on a cut cable)
// and Veth.Impair sets a tc queueing discipline on both ends (netem loss
// 100 % for a cut, netem delay, loss and reordering for a degraded link;
// a kernel without sch_netem answers ErrNoQdisc). Deleting the namespace,
// or the host end, removes the pair and its qdiscs. Host-end names start
// with LinkPrefix; CleanupLinks removes leftovers.
//
// # Proxies
//
// A harness can also forward a namespaced process's paths through
// proxies in the host namespace, over the namespace's loopback:
//
//	holder ──▶ ns 127.0.0.1:P ──Proxy──▶ host 127.0.0.1:<etcd client port>
//	caller ──▶ host 127.0.0.1:Q ──Proxy──▶ ns 127.0.0.1:<holder HTTP port>
//
// A Proxy's Cut is a black hole made in user space (a TCP handshake with
// the proxy still completes); the suite now cuts with the kernel instead,
// and uses proxies only to carry the callers of a service listening on
// the namespace's loopback and, never cut, as relays from a veth's host
// end to servers that listen on the host's loopback.
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
