// Package chaos is snowfence's fault-injection suite: proof under fire that
// no ID is issued twice. It runs the failure stories of docs/design.md
// (clock steps, frozen and crashing holders, store faults and restores,
// bursts, holders cut off from their store or on a degraded link to it)
// against real processes —
// services (`snowfence serve`) and library holders (this package's
// HolderMain, a process embedding the library as a service does) — leasing
// machine numbers from a real store whose servers are processes too,
// injects the faults while load runs, and checks every acknowledged ID.
//
// Command snowfence-chaos runs it; docs/reliability.md has the table of a
// long run and how to read it.
//
// # Stores
//
// Options.Store picks the lease store: etcd (a three-member cluster,
// package etcdproc, fresh for every scenario), PostgreSQL or DynamoDB
// (servers of the suite's own, package internal/testkit/storeproc: a
// PostgreSQL cluster, or dynalite with its data on disk behind
// internal/testkit/dynashim; a fresh lease table for every scenario,
// created as `snowfence leases init` does).
// Services run `serve --lease-store postgres|dynamodb` with the store's
// flags; library holders open pgstore or dynamostore. Holders take the
// store's timings where a scenario sets none (lease.TableTimings on the
// tables: 5 min leases); the scenarios that wait for a lease to expire set
// short ones the product accepts, and say so.
//
// # Scenarios
//
// Each is a named, repeatable run (its random choices derive from the
// seed), on a fresh store and a fresh oracle table. The etcd faults (5a–5h)
// and 11 (two regions, an etcd cluster each) do not apply to the tables,
// 9a–9d only to PostgreSQL, 10a–10c only to DynamoDB and 12a–12d only to
// ZooKeeper: their rows say n/a elsewhere. The short mode runs etcd's
// faults but 5c (quorum lost for 30 s), 4, 8a and 11 on etcd, and 4, 8a and the store's own faults but
// 9d on the tables; on ZooKeeper 8a (partitioned), 12a (killed), 12b
// (frozen) and 12d (restored); on Kubernetes 8a, 13a, 13b and 13d. The
// holders' stories (1–3, 3b, 6, 7, 8b, 8c) run in it once each, spread
// over the stores so that their lanes, side by side in scripts/test, are
// about as long: 2, 3, 8b and 8c on etcd, 1 and 6 on PostgreSQL, 3b and 7
// on DynamoDB. The long mode runs every one that applies.
//
// ZooKeeper (-store zookeeper) runs a standalone server of the suite's own
// (storeproc.ZooKeeper, Debian's zookeeper package under java) and a fresh
// path per scenario; services run `serve --lease-store zookeeper`, library
// holders zkstore.Connect. Its leases are a table's (zkstore.Timings), so
// its faults run the table scenarios' shapes with the tables' short-mode
// timings and bound; its restore (12d) puts a cold copy of the data
// directory back and serves it on a port of its own for the operator's
// raise-marks before the holders' port. The holders refuse for the store's
// restore window after it, the raised mark's and their own restore
// floor's: 6 min in the long mode (as 9d's, which is long-mode only), and
// 14.2 s in the short mode, whose test bound on ZooKeeper carries a
// reserve (shortTableMaxReserve) that zkstore shortens its restore window
// to — so 12d, unlike 9d, runs in the short mode.
//
// Kubernetes (-store kubernetes) runs a kube-apiserver of the suite's own
// over a one-member etcd, both processes (package k8sproc), and a fresh
// namespace per scenario, with a service account allowed only get, list,
// create and patch on its leases whose kubeconfig the library holders
// read (--kubeconfig) to open k8sstore. `snowfence serve` has no
// --lease-store kubernetes yet, so only library holders run there: the
// scenarios whose stories need services say n/a, 4 runs on its library
// pair, 8a cuts a library holder off (cutLongLibraries), and Kubernetes'
// own faults (13a–13d, scenarios_kubernetes.go) judge the holders by what
// they streamed. Its restore (13d) puts an etcd snapshot back under the
// API server without --bump-revision, so resourceVersions repeat; the
// operator's RaiseMarks runs while a relay keeps the holders away. The
// short mode's bound carries ZooKeeper's reserve there too: 14.2 s.
//
// The scenarios:
//
//	1   32 generators at 180,000 IDs/s; node 5's clock steps back 280 ms
//	2   worker 17 steps back 40 ms (refused), then 3 ms (waited out)
//	3   a forward jump of 10 minutes on one node
//	3b  a leap second: holders whose clocks repeat 23:59:59 (a 1 s step back
//	    at midnight UTC) refuse for about a second; smeared ones never refuse
//	4   a holder frozen (SIGSTOP) past its lease while another takes its number
//	5a  etcd: the leader killed (SIGKILL)
//	5b  etcd: quorum lost for 3 s
//	5c  etcd: quorum lost for 30 s
//	5d  etcd: the cluster restored from an old snapshot
//	5e  etcd: one member's data rolled back to an old copy
//	5f  etcd: the leader killed in a cluster with a 3 s election timeout
//	5g  etcd: a member's disk full (its data on a small tmpfs), then freed
//	5h  etcd: a member re-added from an empty data directory
//	6   crash loops: holders SIGKILLed and restarted 100 times
//	7   bursts past 4,096 IDs in one millisecond on one holder
//	8a  holders in network namespaces cut off from the store by the kernel past the self-fence
//	8b  the same cut for less than the self-fence (no refusal expected)
//	8c  the holders' link to the store degraded (netem delay, loss, reordering) under load
//	9a  PostgreSQL stopped (pg_ctl stop -m immediate) past the self-fence, then started
//	9b  PostgreSQL frozen (every server process SIGSTOPped) for less than the self-fence
//	9c  PostgreSQL frozen for more than the self-fence
//	9d  PostgreSQL restored from a base backup taken mid-run, then the runbook's raise-marks
//	10a DynamoDB (dynalite) killed past the self-fence, then started on its data
//	10b DynamoDB (dynalite) frozen for less than the self-fence
//	10c DynamoDB (dynalite) frozen for more than the self-fence
//	11  a lost region: region A's etcd and holders SIGKILLed; callers on the
//	    Go client fail over to region B (its own etcd), then come back
//	12a ZooKeeper killed (SIGKILL) past the self-fence, then started on its data
//	12b ZooKeeper frozen (SIGSTOP) for less than the self-fence
//	12c ZooKeeper frozen for more than the self-fence (long mode)
//	12d ZooKeeper restored from a cold copy of its data, then the runbook's raise-marks
//	13a kube-apiserver killed (SIGKILL) past the self-fence, then started on its etcd
//	13b kube-apiserver frozen (SIGSTOP) for less than the self-fence
//	13c kube-apiserver frozen for more than the self-fence (long mode)
//	13d etcd restored from a snapshot under kube-apiserver, then the runbook's raise-marks
//
// The network scenarios run two services and a library holder each in a
// network namespace of its own, joined to the harness's by two veth pairs
// (one to the store, one for the callers; see scenarios_network.go), and
// make their faults with the kernel on the store's pair only: netem loss
// 100 % or the link taken down, netem delay/loss/reordering (a tbf token
// bucket where the kernel lacks netem). They need root with CAP_NET_ADMIN
// and the ip and tc commands, and fail without them.
//
// Clock faults go through a test-only wall-clock offset: services run with
// `serve --test-clock-offset` (off by default) and are stepped through its
// endpoint; library holders read "step" (and "slew") commands on standard
// input. The machine's clock is never touched.
//
// # What is counted
//
// An ID is acknowledged when a caller received it in a 200 answer, or when
// a library holder streamed it to the harness (in frames, see package
// internal/testkit/wire). Every acknowledged ID goes, in COPY batches, into a
// PostgreSQL table whose PRIMARY KEY (id BIGINT) is the oracle (package
// oracle), and into memory, where a sort finds the same duplicates
// independently. Each lane — a library generator's stream, or what one
// caller got from one service, request after request — must increase.
//
// Callers retry a refused (503) or unanswered attempt on the next service
// until one answers with IDs; "refused" counts refused attempts (and
// refused library calls), "lost" counts requests no service answered
// within the caller's deadline (90 s, longer than any outage a scenario
// makes). A row passes with zero duplicates, zero lost requests, zero
// order violations and every scenario check met: node 5 refused and
// reported unhealthy, the woken holder refused, the forward jump was
// alarmed, and so on.
//
// # Proof that it can fail
//
// HolderMain's --unsafe-no-fence keeps using a grant after its lease is
// gone, with no self-fence and no mark — a Snowflake service without
// fencing. TestDisabledFenceIsCaught runs scenario 4 that way on every
// store and requires duplicates in both checks. snowfence serve has no
// such switch.
package chaos
