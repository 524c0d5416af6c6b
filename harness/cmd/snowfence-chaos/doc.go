// Command snowfence-chaos is the fault-injection suite: it runs snowfence
// services and library holders against a lease store — a three-member etcd
// cluster, a PostgreSQL lease table or a DynamoDB one (dynalite), each on
// servers the suite runs itself (-store) — injects the failures snowfence
// is built to survive (clock steps, frozen and crashing holders, etcd
// leader kills, quorum loss, restores, the tables' servers stopped, frozen
// and restored, bursts, a holder cut off from its store), checks every
// acknowledged ID against a PostgreSQL PRIMARY KEY and in memory, and
// writes a table (Markdown and JSON). It is part of the harness module
// (harness/, a Go module of its own), so it runs from there:
//
//	go run ./cmd/snowfence-chaos -out chaos-out                    # short mode on etcd, minutes
//	go run ./cmd/snowfence-chaos -store all -out chaos-out         # short mode on every store
//	go run ./cmd/snowfence-chaos -long -store all -out chaos-long  # long mode
//	go run ./cmd/snowfence-chaos -store postgres -scenarios 9      # some scenarios
//
// It needs a PostgreSQL for the oracle (-postgres, default
// $SNOWFENCE_TEST_POSTGRES_URL; scripts/services/postgres.sh start prints
// one), Debian's postgresql for -store postgres and dynalite (installed by
// scripts/services/dynalite.sh) for -store dynamodb, Debian's zookeeper
// for -store zookeeper, the kube-apiserver binary
// (scripts/services/kube-apiserver.sh build) for -store kubernetes, and root with
// CAP_NET_ADMIN and the ip and tc commands for the network namespaces and
// veth pairs of scenarios 8a–8c (without them those scenarios fail). It exits 1 if any scenario
// failed: a duplicate, a lost request, an order violation or a failed check.
//
// main.go dispatches; suite.go parses the suite's flags, runs the
// scenarios of harness/chaos and writes the report.
package main
