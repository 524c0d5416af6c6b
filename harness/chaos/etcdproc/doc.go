// Package etcdproc runs an etcd cluster whose members are separate OS
// processes, so that the fault-injection suite can crash, freeze and restore
// real etcd members: SIGKILL is a real crash (no clean shutdown, no leader
// hand-over), SIGSTOP a member that stops answering while its sockets stay
// open, and a restore from an old snapshot the cluster an operator leaves
// behind after restoring a backup.
//
// Each member is embedded etcd (go.etcd.io/etcd/server/v3/embed) run by
// [MemberMain] in a process of its own. The parent never links etcd's server
// into the members' address space: it starts each member with
// [Config.Command], typically the harness binary (or test binary)
// re-executing itself with a role that calls MemberMain.
//
// # Timing
//
// Members tick every 50 ms and call an election after 500 ms without a
// leader (etcd's defaults are 100 ms and 1 s), skip fsync (test data: speed
// over durability), and log only errors, to the member's stderr. A killed
// leader is replaced in roughly one election timeout. Config.Heartbeat and
// Config.Election set other timings for a cluster, as a WAN deployment's
// slower failure detection does.
//
// # Readiness and writability
//
// A member is ready when etcd's ReadyNotify fires: it has joined the cluster
// and published itself through raft, so it has applied every entry
// committed before it started. MemberMain then prints the one line
// "ready <client-url>" on stdout, which is how the parent learns it.
//
// The cluster is writable when a write commits through raft. The probe
// ([Cluster.WaitWritable], also run by [Start] and [Cluster.RestoreAll]) is
// a transaction whose comparison always fails and whose success branch is a
// put of the key "etcdproc/writable": etcd treats it as a write and commits
// it through the raft log, but it changes no key, so the harness leaves the
// store's revision exactly where the test left it.
//
// # Ports
//
// Ports are chosen by asking the kernel for free loopback ports and closing
// them again, so another process may take one before a member binds it.
// [Start] then retries the whole cluster on fresh ports. A member keeps its
// ports for life: [Cluster.Restart] and [Cluster.RestoreAll] reuse them,
// since the peer URLs are part of the cluster's membership.
//
// # Child processes
//
// Members get SIGKILL when the thread of the parent that started them exits
// (Pdeathsig, set on the command unless it already has one), so a crashed
// or killed harness leaves no etcd behind. Go keeps its threads until the
// process ends unless a goroutine locked to one (runtime.LockOSThread)
// exits: do not start or restart members from such a goroutine. [Cluster.Close] resumes paused
// members, kills every member and reaps it; the data directories stay.
//
// # Concurrency
//
// The methods of a Cluster are safe for concurrent use, but faults on one
// member (Kill, Restart, Pause, Resume) should come from one goroutine: the
// outcome of racing a Kill against a Restart of the same member is whichever
// ran last.
package etcdproc
