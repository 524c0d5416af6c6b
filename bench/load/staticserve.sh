# Sourced by client.sh and clients.sh: start_staticserve ADDR DIR builds
# bench/load/staticserve into DIR, starts it on core 0 with GOMAXPROCS=1
# listening on ADDR (its log in DIR/server.log), sets staticserve_pid, and
# waits (at most 10 s) until it answers /healthz. stop_staticserve stops it.
staticserve_pid=
start_staticserve() {
	local addr=$1 dir=$2 here
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	(cd "$here" && go build -o "$dir/staticserve" ./staticserve)
	GOMAXPROCS=1 taskset -c 0 "$dir/staticserve" -addr "$addr" -max-lifetime 30m >"$dir/server.log" 2>&1 &
	staticserve_pid=$!
	for _ in $(seq 100); do
		curl -sf -o /dev/null -m 1 "http://$addr/healthz" && return 0
		sleep 0.1
	done
	curl -sf -o /dev/null -m 1 "http://$addr/healthz" || { cat "$dir/server.log" >&2; return 1; }
}
stop_staticserve() {
	[ -z "$staticserve_pid" ] || { kill -TERM "$staticserve_pid" 2>/dev/null || true; wait "$staticserve_pid" 2>/dev/null || true; }
}
