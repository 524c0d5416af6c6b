// Command snowfence-chaos is the fault-injection suite: it runs snowfence
// services and library holders against a three-member etcd cluster, injects
// the failures snowfence is built to survive (clock steps, frozen and
// crashing holders, etcd leader kills, quorum loss, restores, bursts, a
// holder cut off from etcd), checks every acknowledged ID against a
// PostgreSQL PRIMARY KEY and in memory, and writes a table (Markdown and
// JSON).
//
//	go run ./cmd/snowfence-chaos -out chaos-out             # short mode, minutes
//	go run ./cmd/snowfence-chaos -long -out chaos-long      # ≥ 100 million IDs
//	go run ./cmd/snowfence-chaos -scenarios 1,5b -seed 7    # some scenarios
//
// It needs a PostgreSQL (-postgres, default $SNOWFENCE_TEST_POSTGRES_URL;
// scripts/services/postgres.sh start prints one) and root for the network
// namespace of scenario 8 (without it, scenario 8 runs behind the same
// proxies in the host namespace and says so). It exits 1 if any scenario
// failed: a duplicate, a lost request, an order violation or a failed check.
//
// main.go dispatches; suite.go parses the suite's flags, runs the
// scenarios of internal/chaos and writes the report.
package main
