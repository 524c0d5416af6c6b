#!/usr/bin/env bash
# postgres.sh start|stop|url|status — a throwaway PostgreSQL for the tests.
#
#   start  installs Debian's postgresql if it is missing (apt-get; needs root),
#          creates a cluster in a fresh temporary directory owned by the
#          postgres user (or by the caller when not root), listening only on
#          127.0.0.1 on a free port (5432 when free), trust auth for loopback
#          only, creates the database "snowfence" and prints its URL:
#            postgres://postgres@127.0.0.1:PORT/snowfence?sslmode=disable
#          Starting again while it runs prints the same URL.
#   url    prints the URL of the running server (exit 1 if none).
#   stop   stops it and removes its directory.
#
# The tests read the URL from SNOWFENCE_TEST_POSTGRES_URL:
#   export SNOWFENCE_TEST_POSTGRES_URL="$(scripts/services/postgres.sh start)"
#   go test ./pgstore/...
#   scripts/services/postgres.sh stop
#
# State (the cluster's directory and port) is kept in $SNOWFENCE_POSTGRES_STATE,
# default ${TMPDIR:-/tmp}/snowfence-postgres.state. Diagnostics go to stderr,
# the URL alone to stdout.
set -euo pipefail

state="${SNOWFENCE_POSTGRES_STATE:-${TMPDIR:-/tmp}/snowfence-postgres.state}"
db=snowfence

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

bindir() {
	local d
	d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
	[[ -n "$d" && -x "$d/initdb" ]] && echo "$d"
}

install_pg() {
	[[ -n "$(bindir)" ]] && return 0
	[[ "$(id -u)" == 0 ]] || die "PostgreSQL is not installed and this is not root: run 'apt-get install postgresql' as root"
	log "installing Debian's postgresql (apt-get)"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
	[[ -n "$(bindir)" ]] || die "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/initdb was found"
}

# as_owner runs a command as the cluster's owner: postgres when we are root
# (PostgreSQL refuses to run as root), else ourselves.
as_owner() {
	if [[ "$(id -u)" == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local p
	if ! port_busy 5432; then echo 5432; return; fi
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 20000))
		if ! port_busy "$p"; then echo "$p"; return; fi
	done
	die "no free port found on 127.0.0.1"
}

url_of() { echo "postgres://postgres@127.0.0.1:$1/$db?sslmode=disable"; }

running() {
	[[ -f "$state" ]] || return 1
	# shellcheck disable=SC1090
	source "$state"
	[[ -d "${PGDIR:-}" ]] && as_owner "$(bindir)/pg_ctl" status -D "$PGDIR/data" >/dev/null 2>&1
}

start() {
	install_pg
	if running; then
		log "already running in $PGDIR"
		url_of "$PORT"
		return
	fi
	rm -f "$state"
	local bin dir port
	bin="$(bindir)"
	dir="$(mktemp -d "${TMPDIR:-/tmp}/snowfence-postgres.XXXXXX")"
	chmod 755 "$dir"
	[[ "$(id -u)" == 0 ]] && chown postgres: "$dir"
	as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	# Loopback only, trust only there.
	as_owner tee "$dir/data/pg_hba.conf" >/dev/null <<'HBA'
local all all              trust
host  all all 127.0.0.1/32 trust
HBA
	for attempt in 1 2 3 4 5; do
		port="$(free_port)"
		as_owner tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
		if as_owner "$bin/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/server.log" >&2; then
			break
		fi
		log "start on port $port failed (attempt $attempt); server log:"
		tail -n 5 "$dir/server.log" >&2 || true
		port=""
	done
	[[ -n "$port" ]] || die "PostgreSQL did not start; see $dir/server.log"
	as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db" >&2
	printf 'PGDIR=%q\nPORT=%q\n' "$dir" "$port" >"$state"
	log "running in $dir on 127.0.0.1:$port"
	url_of "$port"
}

stop() {
	if [[ ! -f "$state" ]]; then
		log "not running (no $state)"
		return
	fi
	# shellcheck disable=SC1090
	source "$state"
	if [[ -d "${PGDIR:-}" ]]; then
		as_owner "$(bindir)/pg_ctl" stop -m fast -w -D "$PGDIR/data" >&2 || log "pg_ctl stop failed; removing $PGDIR anyway"
		rm -rf "$PGDIR"
	fi
	rm -f "$state"
	log "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
url) running || die "not running: scripts/services/postgres.sh start"; url_of "$PORT" ;;
status) if running; then log "running in $PGDIR on port $PORT"; else log "not running"; exit 1; fi ;;
*) die "usage: $0 start|stop|url|status" ;;
esac
