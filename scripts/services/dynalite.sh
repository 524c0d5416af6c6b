#!/usr/bin/env bash
# dynalite.sh start|stop|url — a local DynamoDB (the npm package dynalite,
# in memory) on a free loopback port, for the dynamostore tests.
#
#   url=$(scripts/services/dynalite.sh start)   # installs if missing, starts, waits, prints http://127.0.0.1:PORT
#   export SNOWFENCE_TEST_DYNAMODB_ENDPOINT=$url
#   scripts/services/dynalite.sh url            # prints the URL of the running one (exit 1 if none)
#   scripts/services/dynalite.sh stop           # stops it (no error if it is not running)
#
# start is idempotent: a running instance is reused. Diagnostics go to stderr,
# the URL alone to stdout.
#   SNOWFENCE_CACHE      where npm packages are kept (default ~/.cache/snowfence)
#   SNOWFENCE_RUN_DIR    where the pid, URL and log live (default /tmp/snowfence-dynalite-$UID)
set -euo pipefail

cache=${SNOWFENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/snowfence}/dynalite
run=${SNOWFENCE_RUN_DIR:-${TMPDIR:-/tmp}/snowfence-dynalite-$(id -u)}
bin=$cache/node_modules/.bin/dynalite

say() { echo "dynalite.sh: $*" >&2; }

running() {
	[[ -f $run/pid && -f $run/url ]] && kill -0 "$(cat "$run/pid")" 2>/dev/null
}

install() {
	[[ -x $bin ]] && return
	command -v npm >/dev/null || { say "npm not found: install Node.js (apt-get install nodejs npm)"; exit 1; }
	local v
	v=$(npm view dynalite version 2>/dev/null) || { say "npm view dynalite failed: is the npm registry reachable?"; exit 1; }
	say "installing dynalite $v into $cache"
	mkdir -p "$cache"
	npm install --silent --no-audit --no-fund --prefix "$cache" "dynalite@$v" >&2
}

wrapper() {
	cat >"$cache/run.js" <<'JS'
// dynalite's request handler rethrows client aborts; a killed client must
// not take the server down.
process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) return
  console.error(err)
  process.exit(1)
})
require('./node_modules/dynalite/cli.js')
JS
}

freeport() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

answers() {
	# Any HTTP answer means the server is up (dynalite answers a bare GET with 400).
	node -e '
const req=require("http").get(process.argv[1],r=>{process.exit(0)});
req.on("error",()=>process.exit(1));req.setTimeout(500,()=>{req.destroy();process.exit(1)})' "$1"
}

start() {
	if running; then
		cat "$run/url"
		return
	fi
	install
	wrapper
	mkdir -p "$run"
	local port url pid
	for _ in 1 2 3; do
		port=$(freeport)
		url=http://127.0.0.1:$port
		# In memory (no --path); tables become ACTIVE at once. Through
		# run.js: dynalite 4.0.0 throws (and exits) when a client aborts a
		# request mid-body, which the soak's SIGKILLed holders do.
		nohup node "$cache/run.js" --host 127.0.0.1 --port "$port" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 \
			>"$run/log" 2>&1 </dev/null &
		pid=$!
		for _ in $(seq 100); do
			if answers "$url"; then
				echo "$pid" >"$run/pid"
				echo "$url" >"$run/url"
				say "dynalite (pid $pid) at $url"
				echo "$url"
				return
			fi
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		say "dynalite did not answer on port $port; retrying (log: $run/log)"
	done
	say "dynalite failed to start; log follows"
	cat "$run/log" >&2
	exit 1
}

stop() {
	if [[ -f $run/pid ]]; then
		local pid
		pid=$(cat "$run/pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid"
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
			say "stopped dynalite (pid $pid)"
		fi
	fi
	rm -f "$run/pid" "$run/url"
}

case ${1:-} in
start) start ;;
stop) stop ;;
url) running || { say "not running; use: $0 start"; exit 1; }; cat "$run/url" ;;
*) say "usage: $0 start|stop|url"; exit 2 ;;
esac
