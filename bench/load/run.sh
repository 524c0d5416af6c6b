#!/usr/bin/env bash
# Loopback load test of the snowfence HTTP service against its ceiling, a
# constant net/http handler, on the same core.
#
# The server under test runs on core 0 with GOMAXPROCS=1; the load generator
# runs on core 1 (`taskset -c 1 wrk -t1 -c32 -d10s --latency`). Each case
# runs RUNS times and the medians are printed:
#
#   1. constant handler (bench/load/consthttp, a body the size of one ID)
#   2. POST /v1/ids, one ID per request              (bench/load/single.lua)
#   3. POST /v1/ids:batch {"count":1000}             (bench/load/batch.lua)
#   4. POST /v1/ids at half the median rate of (2), open loop
#      (bench/load/rate, timed from the due time when held up behind a busy
#      connection): p50 / p99 / p99.9 latency
#   and, as a baseline, (4) for the constant handler at half its rate.
#
# Environment:
#   SNOWFENCE_SERVE_CMD  the command that starts the server under test so that
#                        it listens on SNOWFENCE_ADDR, e.g.
#                        "/path/to/snowfence serve --listen 127.0.0.1:8080 --machine 1"
#                        (run through `bash -c "exec …"`). Default: staticserve,
#                        built here: package server on a hand-assigned machine
#                        number, no lease store.
#   SNOWFENCE_ADDR       its loopback host:port (default 127.0.0.1:8080)
#   CONST_ADDR           the constant server's host:port (default 127.0.0.1:8090)
#   DURATION             wrk duration per run (default 10s)
#   RUNS                 runs per case (default 3, at most 9)
#   CONNS                connections (default 32)
#   RATE_SECONDS         seconds per open-loop run (default 10, at most 60)
#   READY_TIMEOUT        seconds to wait for a server to answer (default 60)
#   ONLY_CONST=1         measure only the constant handler
#
# Only loopback addresses are accepted. Every wait is bounded.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
SNOWFENCE_ADDR=${SNOWFENCE_ADDR:-127.0.0.1:8080}
CONST_ADDR=${CONST_ADDR:-127.0.0.1:8090}
DURATION=${DURATION:-10s}
RUNS=${RUNS:-3}
CONNS=${CONNS:-32}
RATE_SECONDS=${RATE_SECONDS:-10}
READY_TIMEOUT=${READY_TIMEOUT:-60}
ONLY_CONST=${ONLY_CONST:-0}

die() { echo "run.sh: $*" >&2; exit 1; }

for tool in wrk taskset curl go awk; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y wrk util-linux curl)"
done
[ "$(nproc --all)" -ge 2 ] || die "need at least 2 cores (server on 0, load on 1)"
[[ $RUNS =~ ^[1-9]$ ]] || die "RUNS must be 1..9"
[[ $RATE_SECONDS =~ ^[0-9]+$ ]] && [ "$RATE_SECONDS" -ge 1 ] && [ "$RATE_SECONDS" -le 60 ] || die "RATE_SECONDS must be 1..60"
for a in "$SNOWFENCE_ADDR" "$CONST_ADDR"; do
	case "${a%:*}" in
	127.* | localhost | "[::1]") ;;
	*) die "$a is not a loopback address" ;;
	esac
done

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building the load tools…" >&2
(cd "$here" && go build -o "$tmp/consthttp" ./consthttp && go build -o "$tmp/rate" ./rate && go build -o "$tmp/staticserve" ./staticserve)
SNOWFENCE_SERVE_CMD=${SNOWFENCE_SERVE_CMD:-"$tmp/staticserve -addr $SNOWFENCE_ADDR -max-lifetime 30m"}

# start NAME CMD: run CMD on core 0 with GOMAXPROCS=1; sets $server_pid.
start() {
	GOMAXPROCS=1 taskset -c 0 bash -c "exec $2" >"$tmp/$1.log" 2>&1 &
	server_pid=$!
	pids+=("$server_pid")
}

# stop PID: TERM, then KILL after 5 s.
stop() {
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# ready URL NAME: wait until URL answers 200.
ready() {
	for _ in $(seq $((READY_TIMEOUT * 10))); do
		if curl -sf -o /dev/null -m 1 "$1"; then
			return 0
		fi
		kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/$2.log" >&2; die "$2 exited"; }
		sleep 0.1
	done
	cat "$tmp/$2.log" >&2
	die "$2 did not answer $1 within ${READY_TIMEOUT}s"
}

# to_us VALUE: wrk's "850.00us" / "1.23ms" / "1.02s" in microseconds.
to_us() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
		else if (v ~ /m$/) { sub(/m$/, "", v); print v * 60e6 }
		else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1e6 }
		else print "nan" }'
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# bench LABEL SCRIPT URL: RUNS wrk runs; sets $rps_med and $p99_med (µs).
bench() {
	local label=$1 script=$2 url=$3 rps=() p99=() out r p n
	for i in $(seq "$RUNS"); do
		out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$script" "$url")
		r=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
		p=$(to_us "$(awk '$1 == "99%" { print $2 }' <<<"$out")")
		n=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
		[ -z "$n" ] || echo "  WARNING: $n non-2xx responses" >&2
		printf '  %-28s run %d: %10.0f req/s  p99 %8.1f µs\n' "$label" "$i" "$r" "$p" >&2
		rps+=("$r")
		p99+=("$p")
	done
	rps_med=$(median "${rps[@]}")
	p99_med=$(median "${p99[@]}")
}

# openloop LABEL ADDR RATE: RUNS open-loop runs at RATE req/s; sets
# $p50_med $p99o_med $p999_med (µs) and $err_sum.
openloop() {
	local label=$1 addr=$2 rate=$3 p50=() p99=() p999=() out line
	err_sum=0
	for i in $(seq "$RUNS"); do
		out=$(GOMAXPROCS=1 taskset -c 1 "$tmp/rate" -addr "$addr" -path /v1/ids -rate "$rate" -duration "${RATE_SECONDS}s" -conns "$CONNS")
		line=$(grep '^RESULT' <<<"$out")
		p50+=("$(sed -E 's/.* p50_us=([^ ]+).*/\1/' <<<"$line")")
		p99+=("$(sed -E 's/.* p99_us=([^ ]+).*/\1/' <<<"$line")")
		p999+=("$(sed -E 's/.* p999_us=([^ ]+).*/\1/' <<<"$line")")
		err_sum=$((err_sum + $(sed -E 's/.* errors=([0-9]+).*/\1/' <<<"$line")))
		printf '  %-28s run %d: p50 %8.1f µs  p99 %8.1f µs  p99.9 %8.1f µs\n' "$label" "$i" "${p50[-1]}" "${p99[-1]}" "${p999[-1]}" >&2
	done
	p50_med=$(median "${p50[@]}")
	p99o_med=$(median "${p99[@]}")
	p999_med=$(median "${p999[@]}")
}

warmup() { taskset -c 1 wrk -t1 -c"$CONNS" -d2s -s "$1" "$2" >/dev/null; }

results=()

# 1. The ceiling: a constant handler.
echo "constant handler on $CONST_ADDR (core 0, GOMAXPROCS=1); load on core 1" >&2
start consthttp "$tmp/consthttp -addr $CONST_ADDR -max-lifetime 30m"
const_pid=$server_pid
ready "http://$CONST_ADDR/" consthttp
warmup "$here/single.lua" "http://$CONST_ADDR"
bench "constant handler" "$here/single.lua" "http://$CONST_ADDR"
const_rps=$rps_med
results+=("$(printf '%-34s %12.0f req/s   p99 %8.1f µs' "constant handler" "$rps_med" "$p99_med")")
const_half=$(awk -v r="$const_rps" 'BEGIN { printf "%d", r / 2 }')
openloop "constant @ $const_half/s" "$CONST_ADDR" "$const_half"
results+=("$(printf '%-34s p50 %8.1f µs  p99 %8.1f µs  p99.9 %8.1f µs  errors %d' "constant @ $const_half req/s (open)" "$p50_med" "$p99o_med" "$p999_med" "$err_sum")")
stop "$const_pid"

if [ "$ONLY_CONST" != 1 ]; then
	echo "snowfence on $SNOWFENCE_ADDR: $SNOWFENCE_SERVE_CMD" >&2
	start snowfence "$SNOWFENCE_SERVE_CMD"
	sf_pid=$server_pid
	ready "http://$SNOWFENCE_ADDR/healthz" snowfence
	warmup "$here/single.lua" "http://$SNOWFENCE_ADDR"

	bench "single ID" "$here/single.lua" "http://$SNOWFENCE_ADDR"
	single_rps=$rps_med
	results+=("$(printf '%-34s %12.0f req/s   p99 %8.1f µs   %.2f × constant' "POST /v1/ids (single ID)" "$rps_med" "$p99_med" "$(awk -v a="$rps_med" -v b="$const_rps" 'BEGIN { print a / b }')")")

	bench "batch 1000" "$here/batch.lua" "http://$SNOWFENCE_ADDR"
	results+=("$(printf '%-34s %12.0f req/s   p99 %8.1f µs   %.0f IDs/s' "POST /v1/ids:batch (1000)" "$rps_med" "$p99_med" "$(awk -v a="$rps_med" 'BEGIN { print a * 1000 }')")")

	half=$(awk -v r="$single_rps" 'BEGIN { printf "%d", r / 2 }')
	openloop "single ID @ $half/s" "$SNOWFENCE_ADDR" "$half"
	results+=("$(printf '%-34s p50 %8.1f µs  p99 %8.1f µs  p99.9 %8.1f µs  errors %d' "single ID @ $half req/s (open)" "$p50_med" "$p99o_med" "$p999_med" "$err_sum")")
	stop "$sf_pid"
fi

echo
echo "medians of $RUNS runs (server: core 0, GOMAXPROCS=1; load: core 1, $CONNS connections, wrk $DURATION, open loop ${RATE_SECONDS}s)"
printf '%s\n' "${results[@]}"
