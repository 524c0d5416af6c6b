#!/usr/bin/env bash
# Single-ID requests per second over mutual TLS with keep-alive, beside plain
# HTTP, in the same run on the same core.
#
# Two `snowfence serve` processes (each its own embedded etcd) run on core 0
# with GOMAXPROCS=1: one plain, one with --tls-cert/--tls-key/--client-ca
# and a callers file (the certificates are made here with openssl, with the
# commands docs/deployment.md gives). The closed-loop load generator
# (bench/load/rate -closed) runs on core 1 with CONNS keep-alive connections;
# runs alternate between the two servers, RUNS times, and the medians and
# their ratio are printed. Each server writes a CPU profile (--cpuprofile)
# of the whole session into OUT (default bench/load/out), and the share of
# each server's samples spent in TLS record encryption and decryption, in
# the perimeter's quota and in the rest of the request is printed at the
# end: the difference is what mutual TLS costs per request.
#
#   bench/load/tls.sh                       # RUNS=5 DURATION=10s CONNS=32
#   RUNS=1 DURATION=2s bench/load/tls.sh    # a quick check of the script
#
# Only loopback addresses are used. Every wait is bounded.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PLAIN_ADDR=${PLAIN_ADDR:-127.0.0.1:8180}
TLS_ADDR=${TLS_ADDR:-127.0.0.1:8181}
DURATION=${DURATION:-10s}
RUNS=${RUNS:-5}
CONNS=${CONNS:-32}
OUT=${OUT:-$here/out}

die() { echo "tls.sh: $*" >&2; exit 1; }
for tool in taskset curl go openssl awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
[ "$(nproc --all)" -ge 2 ] || die "need at least 2 cores (servers on 0, load on 1)"
[[ $RUNS =~ ^[1-9]$ ]] || die "RUNS must be 1..9"

tmp=$(mktemp -d)
mkdir -p "$OUT"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building snowfence and the load generator…" >&2
(cd "$root" && go build -o "$tmp/snowfence" ./cmd/snowfence)
(cd "$here" && go build -o "$tmp/rate" ./rate)

# The certificates: a callers CA, the server's certificate, one caller's.
pki=$tmp/pki
mkdir -p "$pki"
(
	cd "$pki"
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -days 2 \
		-subj "/CN=snowfence callers CA" -keyout ca.key -out ca.pem \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-subj "/CN=snowfence" -keyout server.key -out server.csr
	openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out server.pem \
		-extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n')
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-subj "/CN=bench" -keyout bench.key -out bench.csr
	openssl x509 -req -in bench.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out bench.pem \
		-extfile <(printf 'subjectAltName=URI:spiffe://corp/bench\nextendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n')
	printf '{"default": "deny", "callers": {"spiffe://corp/bench": {"rate": 1e8, "burst": 100000}}}\n' >callers.json
) >/dev/null 2>&1 || die "openssl failed"

# start NAME ADDR FLAGS…: a serve on core 0 with GOMAXPROCS=1.
start() {
	local name=$1 addr=$2
	shift 2
	GOMAXPROCS=1 taskset -c 0 "$tmp/snowfence" serve --listen "$addr" --data-dir "$tmp/$name-data" \
		--embedded-etcd-url http://127.0.0.1:0 --log-level warn --cpuprofile "$OUT/tls-$name.pprof" "$@" \
		>"$tmp/$name.log" 2>&1 &
	pids+=("$!")
}
start plain "$PLAIN_ADDR" --admin-listen 127.0.0.1:0
start mtls "$TLS_ADDR" --tls-cert "$pki/server.pem" --tls-key "$pki/server.key" --client-ca "$pki/ca.pem" \
	--callers "$pki/callers.json" --admin-listen 127.0.0.1:0

# ready NAME: wait until the serve prints that it issues on its admin
# listener's /readyz.
ready() {
	local admin=""
	for _ in $(seq 600); do
		admin=$(sed -nE 's/^admin on (http:[^ ]+).*/\1/p' "$tmp/$1.log" | head -1)
		if [ -n "$admin" ] && curl -sf -o /dev/null -m 1 "$admin/readyz"; then
			return 0
		fi
		sleep 0.1
	done
	cat "$tmp/$1.log" >&2
	die "$1 did not become ready within 60 s"
}
ready plain
ready mtls

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# once ADDR [TLS FLAGS…]: one closed-loop run; prints "req/s p99_µs errors".
once() {
	local addr=$1 out line
	shift
	out=$(GOMAXPROCS=1 taskset -c 1 "$tmp/rate" -closed -addr "$addr" -path /v1/ids -duration "$DURATION" -conns "$CONNS" "$@")
	line=$(grep '^RESULT' <<<"$out")
	for k in achieved p99_us errors; do
		sed -E "s/.* $k=([^ ]+).*/\1/" <<<"$line"
	done | paste -sd' '
}
tlsflags=(-ca "$pki/ca.pem" -cert "$pki/bench.pem" -key "$pki/bench.key")
once "$PLAIN_ADDR" >/dev/null # warm-up
once "$TLS_ADDR" "${tlsflags[@]}" >/dev/null

p_rps=() p_p99=() t_rps=() t_p99=()
for i in $(seq "$RUNS"); do
	read -r r p e < <(once "$PLAIN_ADDR")
	printf '  run %d  %-28s %9.0f req/s  p99 %8.1f µs  errors %s\n' "$i" "plain HTTP" "$r" "$p" "$e" >&2
	p_rps+=("$r") p_p99+=("$p")
	read -r r p e < <(once "$TLS_ADDR" "${tlsflags[@]}")
	printf '  run %d  %-28s %9.0f req/s  p99 %8.1f µs  errors %s\n' "$i" "mutual TLS, keep-alive" "$r" "$p" "$e" >&2
	t_rps+=("$r") t_p99+=("$p")
done
pr=$(median "${p_rps[@]}")
tr=$(median "${t_rps[@]}")
echo
echo "medians of $RUNS runs (servers: core 0, GOMAXPROCS=1; load: core 1, $CONNS keep-alive connections, closed loop, $DURATION)"
printf '%-28s %9.0f req/s  p99 %8.1f µs\n' "POST /v1/ids, plain HTTP" "$pr" "$(median "${p_p99[@]}")"
printf '%-28s %9.0f req/s  p99 %8.1f µs  %.2f × plain\n' "POST /v1/ids, mutual TLS" "$tr" "$(median "${t_p99[@]}")" \
	"$(awk -v a="$tr" -v b="$pr" 'BEGIN { print a / b }')"

# Stop the servers (SIGTERM writes the profiles), then show where each
# spent its core.
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
cp "$tmp/snowfence" "$OUT/tls-snowfence"
echo
echo "where each server's core went (share of its CPU samples; profiles and binary in $OUT):"
for name in plain mtls; do
	top=$(go tool pprof -top -cum -nodecount 400 "$OUT/tls-snowfence" "$OUT/tls-$name.pprof" 2>/dev/null)
	total=$(sed -nE 's/.*Total samples = ([0-9.]+)s.*/\1/p' <<<"$top")
	share() { awk -v f="$1" -v t="$total" '$NF == f { sub(/s$/, "", $4); printf "%5.1f%%", 100 * $4 / t; found = 1 } END { if (!found) printf "  0.0%%" }' <<<"$top"; }
	printf '  %-6s TLS encrypt %s  TLS decrypt %s  quota %s  handler %s  syscall write %s  read %s\n' "$name" \
		"$(share 'crypto/tls.(*halfConn).encrypt')" "$(share 'crypto/tls.(*halfConn).decrypt')" \
		"$(share 'github.com/snowfence/snowfence/perimeter.(*Perimeter).Take')" \
		"$(share 'github.com/snowfence/snowfence/server.handler.ServeHTTP')" \
		"$(share 'syscall.write')" "$(share 'syscall.read')"
done
