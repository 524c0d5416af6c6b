#!/usr/bin/env bash
# The Go client against one server core, beside the batch endpoint's own
# rate, in the same run.
#
# The server (bench/load/staticserve: package server on a hand-assigned
# machine number, the system clock, so one generator's 4,096 IDs per
# millisecond is the ceiling) runs on core 0 with GOMAXPROCS=1. On core 1,
# client's BenchmarkClientServer (one Client, Next in a loop) and
# BenchmarkBatchRequests (sequential POST /v1/ids?count=1000 on one
# kept-alive connection, parsed as the client parses) alternate COUNT times
# each (-count), and benchstat prints the medians.
#
#   bench/load/client.sh                 # COUNT=10 BENCHTIME=2s
#
# Loopback only; every wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ADDR=${ADDR:-127.0.0.1:8280}
COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-2s}
tmp=$(mktemp -d)
. "$here/staticserve.sh"
cleanup() {
	stop_staticserve
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$root" && go test -c -o "$tmp/client.test" ./client)
start_staticserve "$ADDR" "$tmp"
for i in $(seq "$COUNT"); do
	for b in ClientServer BatchRequests; do
		SNOWFENCE_BENCH_URL=http://$ADDR taskset -c 1 "$tmp/client.test" -test.run '^$' \
			-test.bench "^Benchmark$b\$" -test.benchtime "$BENCHTIME" -test.count 1
	done
done | tee "$tmp/out.txt" | grep -E '^Benchmark' >&2
(cd "$root/bench" && go tool benchstat "$tmp/out.txt")
