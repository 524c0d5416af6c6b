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
#   4. open loop (bench/load/rate, no coordinated omission: a request held
#      up behind a busy connection is timed from its due time) at each rate
#      of OPEN_RATES, by default 5,000 and 10,000 req/s and half the median
#      single-ID maximum of (2): the constant handler and POST /v1/ids at the
#      same rate with the same generator, runs alternating (the first server
#      of a run alternates too), p50 / p99 / p99.9 medians and the ratio of
#      the p99 medians, snowfence over constant.
#
# Each run line ends with the 1-minute load average when it started and, for
# open-loop runs, "behind" (requests that fell due while their connection was
# still busy, timed from their due time, so the generator's own delays count
# in them) and "waited": how long the server's threads were ready to run but
# core 0 ran something else (/proc/PID/task/*/schedstat), so a run taken while
# the machine was busy shows as such.
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
#   OPEN_RATES           open-loop rates in req/s, "half" for half the single-ID
#                        maximum (default "5000 10000 half")
#   SERVER_GODEBUG       GODEBUG for both servers, e.g. gctrace=1 (default none)
#   KEEP_LOGS            a directory to copy both servers' logs into (stderr,
#                        where gctrace writes); default: not kept
#   PROFILE_DIR          a directory where the built-in servers (consthttp and
#                        the default staticserve) write a CPU profile of the
#                        whole test each (consthttp.pprof, staticserve.pprof)
#   ONLY_CONST=1         measure only the constant handler
#   SKIP_BATCH=1         skip the batch case (3)
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
SKIP_BATCH=${SKIP_BATCH:-0}
OPEN_RATES=${OPEN_RATES:-"5000 10000 half"}
SERVER_GODEBUG=${SERVER_GODEBUG:-}
KEEP_LOGS=${KEEP_LOGS:-}
PROFILE_DIR=${PROFILE_DIR:-}

die() { echo "run.sh: $*" >&2; exit 1; }

for tool in wrk taskset curl go awk; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y wrk util-linux curl)"
done
[ "$(nproc --all)" -ge 2 ] || die "need at least 2 cores (server on 0, load on 1)"
[[ $RUNS =~ ^[1-9]$ ]] || die "RUNS must be 1..9"
for r in $OPEN_RATES; do
	[[ $r == half || $r =~ ^[1-9][0-9]{0,5}$ ]] || die "OPEN_RATES: $r is not a rate (1..999999) or half"
done
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
	if [ -n "$KEEP_LOGS" ]; then
		mkdir -p "$KEEP_LOGS" && cp "$tmp"/*.log "$KEEP_LOGS"/ 2>/dev/null || true
	fi
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
const_flags="" static_flags=""
if [ -n "$PROFILE_DIR" ]; then
	mkdir -p "$PROFILE_DIR"
	const_flags="-cpuprofile $PROFILE_DIR/consthttp.pprof" static_flags="-cpuprofile $PROFILE_DIR/staticserve.pprof"
fi
SNOWFENCE_SERVE_CMD=${SNOWFENCE_SERVE_CMD:-"$tmp/staticserve -addr $SNOWFENCE_ADDR -max-lifetime 30m $static_flags"}

# start NAME CMD: run CMD on core 0 with GOMAXPROCS=1; sets $server_pid.
start() {
	GODEBUG=$SERVER_GODEBUG GOMAXPROCS=1 taskset -c 0 bash -c "exec $2" >"$tmp/$1.log" 2>&1 &
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

loadavg() { cut -d' ' -f1 /proc/loadavg; }

# runq PID: nanoseconds PID's threads have spent ready to run but waiting for
# a core.
runq() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $2 } END { printf "%.0f", s }'; }

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

# openloop_once ADDR RATE: one open-loop run; prints "p50 p99 p99.9 errors
# behind" (behind: requests sent late because their connection was still busy,
# timed from their due time).
openloop_once() {
	local out line
	out=$(GOMAXPROCS=1 taskset -c 1 "$tmp/rate" -addr "$1" -path /v1/ids -rate "$2" -duration "${RATE_SECONDS}s" -conns "$CONNS")
	line=$(grep '^RESULT' <<<"$out")
	for k in p50_us p99_us p999_us errors behind; do
		sed -E "s/.* $k=([^ ]+).*/\1/" <<<"$line"
	done | paste -sd' '
}

warmup() { taskset -c 1 wrk -t1 -c"$CONNS" -d2s -s "$1" "$2" >/dev/null; }

# Both servers run on core 0 for the whole test and the runs alternate, so
# drift in what else the machine is doing falls on both alike. A server
# without load costs next to nothing.
echo "constant handler on $CONST_ADDR (core 0, GOMAXPROCS=1); load on core 1" >&2
start consthttp "$tmp/consthttp -addr $CONST_ADDR -max-lifetime 30m $const_flags"
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
	la=$(loadavg)
	read -r r p < <(wrk_once "$here/single.lua" "http://$CONST_ADDR")
	printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs  load %s\n' "$i" "constant handler" "$r" "$p" "$la" >&2
	c_rps+=("$r") c_p99+=("$p")
	[ "$ONLY_CONST" != 1 ] || continue
	la=$(loadavg)
	read -r r p < <(wrk_once "$here/single.lua" "http://$SNOWFENCE_ADDR")
	printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs  load %s\n' "$i" "POST /v1/ids" "$r" "$p" "$la" >&2
	s_rps+=("$r") s_p99+=("$p")
done
if [ "$ONLY_CONST" != 1 ] && [ "$SKIP_BATCH" != 1 ]; then
	for i in $(seq "$RUNS"); do
		la=$(loadavg)
		read -r r p < <(wrk_once "$here/batch.lua" "http://$SNOWFENCE_ADDR")
		printf '  run %d  %-36s %10.0f req/s  p99 %8.1f µs  load %s\n' "$i" "POST /v1/ids:batch 1000" "$r" "$p" "$la" >&2
		b_rps+=("$r") b_p99+=("$p")
	done
fi

const_rps=$(median "${c_rps[@]}")
results=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs' "constant handler" "$const_rps" "$(median "${c_p99[@]}")")")
if [ "$ONLY_CONST" != 1 ]; then
	single_rps=$(median "${s_rps[@]}")
	results+=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs   %.2f × constant' "POST /v1/ids (single ID)" "$single_rps" "$(median "${s_p99[@]}")" "$(awk -v a="$single_rps" -v b="$const_rps" 'BEGIN { print a / b }')")")
	[ "$SKIP_BATCH" = 1 ] || batch_rps=$(median "${b_rps[@]}")
	[ "$SKIP_BATCH" = 1 ] || results+=("$(printf '%-38s %10.0f req/s   p99 %8.1f µs   %.0f IDs/s' "POST /v1/ids:batch (1000)" "$batch_rps" "$(median "${b_p99[@]}")" "$(awk -v a="$batch_rps" 'BEGIN { print a * 1000 }')")")
fi

# Open loop at each rate: the constant handler and the single-ID endpoint
# at the same rate, runs alternating, and which goes first alternating too,
# so drift in what else the machine does falls on both alike.
# openloop_run LABEL ADDR RATE RUN PID: one run against the server PID;
# appends to the arrays named after LABEL (const or sf).
openloop_run() {
	local a b c e k la w0 w1
	la=$(loadavg)
	w0=$(runq "$5")
	read -r a b c e k < <(openloop_once "$2" "$3")
	w1=$(runq "$5")
	local name=$1
	[ "$name" != sf ] || name=snowfence
	printf '  run %d  %-9s @ %6d req/s (open loop)  p50 %7.1f µs  p99 %8.1f µs  p99.9 %8.1f µs  errors %d  behind %d  load %s  waited %.1f ms\n' \
		"$4" "$name" "$3" "$a" "$b" "$c" "$e" "$k" "$la" "$(awk -v a="$w0" -v b="$w1" 'BEGIN { print (b - a) / 1e6 }')" >&2
	eval "${1}_p50+=(\"\$a\") ${1}_p99+=(\"\$b\") ${1}_p999+=(\"\$c\")"
	[ "$e" = 0 ] || open_errors=$((open_errors + e))
}
open_errors=0
open_rows=()
for r in $OPEN_RATES; do
	if [ "$r" = half ]; then
		m=$const_rps
		[ "$ONLY_CONST" = 1 ] || m=$single_rps
		r=$(awk -v m="$m" 'BEGIN { printf "%d", m / 2 }')
	fi
	const_p50=() const_p99=() const_p999=() sf_p50=() sf_p99=() sf_p999=()
	for i in $(seq "$RUNS"); do
		if [ "$ONLY_CONST" = 1 ]; then
			openloop_run const "$CONST_ADDR" "$r" "$i" "$const_pid"
		elif [ $((i % 2)) = 1 ]; then
			openloop_run const "$CONST_ADDR" "$r" "$i" "$const_pid"
			openloop_run sf "$SNOWFENCE_ADDR" "$r" "$i" "$sf_pid"
		else
			openloop_run sf "$SNOWFENCE_ADDR" "$r" "$i" "$sf_pid"
			openloop_run const "$CONST_ADDR" "$r" "$i" "$const_pid"
		fi
	done
	row=$(printf '%6d req/s   constant  p50 %7.1f  p99 %7.1f  p99.9 %7.1f µs' "$r" "$(median "${const_p50[@]}")" "$(median "${const_p99[@]}")" "$(median "${const_p999[@]}")")
	if [ "$ONLY_CONST" != 1 ]; then
		row+=$(printf '   snowfence  p50 %7.1f  p99 %7.1f  p99.9 %7.1f µs   p99 ratio %.2f' "$(median "${sf_p50[@]}")" "$(median "${sf_p99[@]}")" "$(median "${sf_p999[@]}")" \
			"$(awk -v a="$(median "${sf_p99[@]}")" -v b="$(median "${const_p99[@]}")" 'BEGIN { print a / b }')")
	fi
	open_rows+=("$row")
done
[ "$ONLY_CONST" = 1 ] || stop "$sf_pid"
stop "$const_pid"

echo
echo "medians of $RUNS runs (server: core 0, GOMAXPROCS=1; load: core 1, $CONNS connections, wrk $DURATION, open loop ${RATE_SECONDS}s)"
printf '%s\n' "${results[@]}"
echo "open loop, medians of $RUNS runs each, same rate and generator for both (ratio: snowfence p99 / constant p99; target ≤ 1.2):"
printf '%s\n' "${open_rows[@]}"
[ "$open_errors" = 0 ] || echo "WARNING: $open_errors open-loop requests failed or went unanswered"
