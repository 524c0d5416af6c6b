#!/usr/bin/env bash
# Loopback load test of the snowfence HTTP service against its ceiling, a
# constant net/http handler, on the same core.
#
# The servers run on core 0 with GOMAXPROCS=1; the load generator runs on
# core 1 (`taskset -c 1 wrk -t1 -c32 -d10s --latency`). Each case runs RUNS
# times (constant and single-ID runs alternate) and the medians are printed:
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

# wrk_once SCRIPT URL: one wrk run; prints "req/s p99_µs".
wrk_once() {
	local out r p n
	out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$1" "$2")
	r=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	p=$(to_us "$(awk '$1 == "99%" { print $2 }' <<<"$out")")
	n=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")
	[ -z "$n" ] || echo "  WARNING: $n non-2xx responses from $2" >&2
	echo "$r $p"
}

# openloop_once ADDR RATE: one open-loop run; prints "p50 p99 p99.9 errors".
openloop_once() {
	local out line
	out=$(GOMAXPROCS=1 taskset -c 1 "$tmp/rate" -addr "$1" -path /v1/ids -rate "$2" -duration "${RATE_SECONDS}s" -conns "$CONNS")
	line=$(grep '^RESULT' <<<"$out")
	for k in p50_us p99_us p999_us errors; do
		sed -E "s/.* $k=([^ ]+).*/\1/" <<<"$line"
	done | paste -sd' '
}

warmup() { taskset -c 1 wrk -t1 -c"$CONNS" -d2s -s "$1" "$2" >/dev/null; }

# Both servers run on core 0 for the whole test and the runs alternate, so
# drift in what else the machine is doing falls on both alike. A server
# without load costs next to nothing.
echo "constant handler on $CONST_ADDR (core 0, GOMAXPROCS=1); load on core 1" >&2
start consthttp "$tmp/consthttp -addr $CONST_ADDR -max-lifetime 30m"
const_pid=$server_pid
ready "http://$CONST_ADDR/" consthttp
warmup "$here/single.lua" "http://$CONST_ADDR"
if [ "$ONLY_CONST" != 1 ]; then
	echo "snowfence on $SNOWFENCE_ADDR: $SNOWFENCE_SERVE_CMD" >&2
	start snowfence "$SNOWFENCE_SERVE_CMD"
	sf_pid=$server_pid
	ready "http://$SNOWFENCE_ADDR/healthz" snowfence
	warmup "$here/single.lua" "http://$SNOWFENCE_ADDR"
fi

c_rps=() c_p99=() s_rps=() s_p99=() b_rps=() b_p99=()
for i in $(seq "$RUNS"); do
	read -r r p < <(wrk_once "$here/single.lua" "http://$CONST_ADDR")
	printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs\n' "$i" "constant handler" "$r" "$p" >&2
	c_rps+=("$r") c_p99+=("$p")
	[ "$ONLY_CONST" != 1 ] || continue
	read -r r p < <(wrk_once "$here/single.lua" "http://$SNOWFENCE_ADDR")
	printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs\n' "$i" "POST /v1/ids" "$r" "$p" >&2
	s_rps+=("$r") s_p99+=("$p")
done
if [ "$ONLY_CONST" != 1 ]; then
	for i in $(seq "$RUNS"); do
		read -r r p < <(wrk_once "$here/batch.lua" "http://$SNOWFENCE_ADDR")
		printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs\n' "$i" "POST /v1/ids:batch 1000" "$r" "$p" >&2
		b_rps+=("$r") b_p99+=("$p")
	done
fi

const_rps=$(median "${c_rps[@]}")
results=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs' "constant handler" "$const_rps" "$(median "${c_p99[@]}")")")
if [ "$ONLY_CONST" != 1 ]; then
	single_rps=$(median "${s_rps[@]}")
	results+=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs   %.2f × constant' "POST /v1/ids (single ID)" "$single_rps" "$(median "${s_p99[@]}")" "$(awk -v a="$single_rps" -v b="$const_rps" 'BEGIN { print a / b }')")")
	batch_rps=$(median "${b_rps[@]}")
	results+=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs   %.0f IDs/s' "POST /v1/ids:batch (1000)" "$batch_rps" "$(median "${b_p99[@]}")" "$(awk -v a="$batch_rps" 'BEGIN { print a * 1000 }')")")
fi

# Open loop at half the measured maximum: the constant handler at half its
# rate as the baseline, then the single-ID endpoint at half its rate.
openloop_case() {
	local label=$1 addr=$2 rate=$3 p50=() p99=() p999=() errs=0 a b c e
	for i in $(seq "$RUNS"); do
		read -r a b c e < <(openloop_once "$addr" "$rate")
		printf '  run %d  %-36s p50 %8.1f µs  p99 %8.1f µs  p99.9 %8.1f µs  errors %d\n' "$i" "$label" "$a" "$b" "$c" "$e" >&2
		p50+=("$a") p99+=("$b") p999+=("$c")
		errs=$((errs + e))
	done
	results+=("$(printf '%-38s p50 %8.1f µs  p99 %8.1f µs  p99.9 %8.1f µs  errors %d' "$label" "$(median "${p50[@]}")" "$(median "${p99[@]}")" "$(median "${p999[@]}")" "$errs")")
}
half=$(awk -v r="$const_rps" 'BEGIN { printf "%d", r / 2 }')
openloop_case "constant @ $half req/s (open loop)" "$CONST_ADDR" "$half"
if [ "$ONLY_CONST" != 1 ]; then
	half=$(awk -v r="$single_rps" 'BEGIN { printf "%d", r / 2 }')
	openloop_case "single ID @ $half req/s (open loop)" "$SNOWFENCE_ADDR" "$half"
	stop "$sf_pid"
fi
stop "$const_pid"

echo
echo "medians of $RUNS runs (server: core 0, GOMAXPROCS=1; load: core 1, $CONNS connections, wrk $DURATION, open loop ${RATE_SECONDS}s)"
printf '%s\n' "${results[@]}"
