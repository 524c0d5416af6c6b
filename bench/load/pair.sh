#!/usr/bin/env bash
# pair.sh RATE RUNS SECONDS OUTDIR [GOGC]: the constant handler (consthttp)
# and staticserve side by side on core 0 (GOMAXPROCS=1), the open-loop
# generator (rate) on core 1, runs alternating (and which goes first
# alternating too), each server writing a CPU profile and gctrace of the open
# loop only (no closed-loop runs mixed in), for `go tool pprof` of the two.
# After the runs, snowfence's sequence waits and GC pauses from /metrics go to
# OUTDIR/metrics.txt. Loopback only; bounded: RUNS 1..9, SECONDS 1..30.
#
#   bench/load/pair.sh 21000 5 10 /tmp/pair
#   go tool pprof -top -cum /tmp/pair/ss /tmp/pair/ss.pprof
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: pair.sh RATE RUNS SECONDS OUTDIR [GOGC]" >&2; exit 2; }
rate=$1 runs=$2 secs=$3 out=$4 gogc=${5:-100}
[[ $runs =~ ^[1-9]$ ]] || { echo "pair.sh: RUNS must be 1..9" >&2; exit 2; }
[[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -ge 1 ] && [ "$secs" -le 30 ] || { echo "pair.sh: SECONDS must be 1..30" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
(cd "$here" && go build -o "$out/ch" ./consthttp && go build -o "$out/ss" ./staticserve && go build -o "$out/rate" ./rate)
GOGC=$gogc GODEBUG=gctrace=1 GOMAXPROCS=1 taskset -c 0 "$out/ch" -addr 127.0.0.1:8091 -max-lifetime 10m -cpuprofile "$out/ch.pprof" 2>"$out/ch.log" &
cp=$!
GOGC=$gogc GODEBUG=gctrace=1 GOMAXPROCS=1 taskset -c 0 "$out/ss" -addr 127.0.0.1:8081 -max-lifetime 10m -cpuprofile "$out/ss.pprof" 2>"$out/ss.log" &
sp=$!
trap 'kill -TERM $cp $sp 2>/dev/null; wait $cp $sp 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	curl -sf -o /dev/null -m 1 http://127.0.0.1:8081/healthz && curl -sf -o /dev/null -m 1 http://127.0.0.1:8091/ && break
	sleep 0.1
done
one() { # NAME ADDR
	local la
	la=$(cut -d' ' -f1 /proc/loadavg)
	echo "$1 load $la $(GOMAXPROCS=1 taskset -c 1 "$out/rate" -addr "$2" -rate "$rate" -duration "${secs}s" | grep ^RESULT)"
}
one const 127.0.0.1:8091 >/dev/null # warm-up
one snowfence 127.0.0.1:8081 >/dev/null
for i in $(seq "$runs"); do
	if [ $((i % 2)) = 1 ]; then
		one const 127.0.0.1:8091
		one snowfence 127.0.0.1:8081
	else
		one snowfence 127.0.0.1:8081
		one const 127.0.0.1:8091
	fi
done
curl -s http://127.0.0.1:8081/metrics | grep -E '^snowfence_(sequence_waits_total|ids_issued_total)|^go_gc_duration_seconds' >"$out/metrics.txt"
