// Package chaos is snowfence's fault-injection suite: proof under fire that
// no ID is issued twice. It runs the failure stories of docs/design.md
// (clock steps, frozen and crashing holders, etcd faults and restores,
// bursts, a holder cut off from etcd) against real processes — services
// (`snowfence serve`) and library holders (this package's HolderMain, a
// process embedding the library as a service does) — leasing machine
// numbers from a real three-member etcd cluster whose members are
// processes too (package etcdproc), injects the faults while load runs,
// and checks every acknowledged ID.
//
// Command snowfence-chaos runs it; docs/reliability.md has the table of a
// long run and how to read it.
//
// # Scenarios
//
// Each is a named, repeatable run (its random choices derive from the
// seed), on a fresh etcd cluster and a fresh oracle table:
//
//	1   32 generators at 180,000 IDs/s; node 5's clock steps back 280 ms
//	2   worker 17 steps back 40 ms (refused), then 3 ms (waited out)
//	3   a forward jump of 10 minutes on one node
//	4   a holder frozen (SIGSTOP) past its lease while another takes its number
//	5a  etcd: the leader killed (SIGKILL)
//	5b  etcd: quorum lost for 3 s
//	5c  etcd: quorum lost for 30 s
//	5d  etcd: the cluster restored from an old snapshot
//	5e  etcd: one member's data rolled back to an old copy
//	6   crash loops: holders SIGKILLed and restarted 100 times
//	7   bursts past 4,096 IDs in one millisecond on one holder
//	8   a holder cut off from etcd (own network namespace) while it serves callers
//
// Clock faults go through a test-only wall-clock offset: services run with
// `serve --test-clock-offset` (off by default) and are stepped through its
// endpoint; library holders read "step" commands on standard input. The
// machine's clock is never touched.
//
// # What is counted
//
// An ID is acknowledged when a caller received it in a 200 answer, or when
// a library holder streamed it to the harness (in frames, see package
// internal/wire). Every acknowledged ID goes, in COPY batches, into a
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
// fencing. TestDisabledFenceIsCaught runs scenario 4 that way and requires
// duplicates in both checks. snowfence serve has no such switch.
package chaos
