#!/usr/bin/env bash
# Each client library (Go, Java, Python, TypeScript) against one server core,
# as a ratio of the batch endpoint's rate measured by wrk in the same run.
#
# The server (bench/load/staticserve: package server on a hand-assigned
# machine number, the system clock) runs on core 0 with GOMAXPROCS=1. On
# core 1, runs alternate RUNS times:
#   - wrk, one connection, POST /v1/ids:batch {"count":1000} one after
#     another (-t1 -c1): the rate one caller gets from the endpoint with no
#     client library, in IDs/s (requests/s × 1,000);
#   - each client's conformance runner (clients/<language>/conformance-runner,
#     clients/conformance/PROTOCOL.md) with the op "run": next() in a loop
#     on one thread for DURATION, its buffer refilled in the background.
# It prints each run, then per client the median IDs/s and its ratio to
# wrk's median.
#
#   bench/load/clients.sh                 # RUNS=3 DURATION=5s
#   CLIENTS="java js" bench/load/clients.sh
#
# Loopback only; every wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ADDR=${ADDR:-127.0.0.1:8281}
RUNS=${RUNS:-3}
DURATION=${DURATION:-5s}
CLIENTS=${CLIENTS:-go java python js}
case "$ADDR" in 127.*) ;; *) echo "clients.sh: ADDR must be a loopback address" >&2; exit 2 ;; esac
secs=${DURATION%s}
ms=$(( secs * 1000 ))
tmp=$(mktemp -d)
. "$here/staticserve.sh"
cleanup() {
	stop_staticserve
	rm -rf "$tmp"
}
trap cleanup EXIT
for c in $CLIENTS; do
	"$root/clients/$c/conformance-runner" --build >&2
done
start_staticserve "$ADDR" "$tmp"

# rate_of CLIENT: one run of the client's runner, in IDs/s.
rate_of() {
	printf '{"op":"open","config":{"endpoints":["http://%s"]}}\n{"op":"run","ms":%d}\n' "$ADDR" "$ms" |
		(cd "$root/clients/$1" && timeout $(( secs + 60 )) taskset -c 1 ./conformance-runner) |
		python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin]
run = lines[-1]
if not all(l.get("ok") for l in lines) or run.get("not_increasing", 1) != 0:
    sys.exit("clients.sh: %s" % lines)
print("%.0f" % (run["count"] / (run["elapsed_ns"] / 1e9)))'
}
for i in $(seq "$RUNS"); do
	req=$(taskset -c 1 wrk -t1 -c1 -d"$DURATION" -s "$here/batch.lua" "http://$ADDR" | awk '/^Requests\/sec/ {print $2}')
	echo "wrk $(python3 -c "print('%.0f' % ($req * 1000))")" | tee -a "$tmp/runs"
	for c in $CLIENTS; do
		echo "$c $(rate_of "$c")" | tee -a "$tmp/runs"
	done
done >&2
python3 - "$tmp/runs" "$CLIENTS" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, rate = line.split()
    runs.setdefault(name, []).append(float(rate))
base = statistics.median(runs["wrk"])
print("%-8s %14s %8s" % ("", "IDs/s (median)", "× wrk"))
print("%-8s %14.0f %8s" % ("wrk -c1", base, "1.00"))
for c in sys.argv[2].split():
    m = statistics.median(runs[c])
    print("%-8s %14.0f %8.2f" % (c, m, m / base))
PY
