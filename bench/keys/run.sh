#!/usr/bin/env bash
# What a key type costs in PostgreSQL: one table per key type, ROWS rows
# each (default 10,000,000), loaded in COPY batches, then measured for insert
# rate, index size, leaf density, WAL bytes and point-lookup rate. See
# bench/keys/main.go for what is measured and how.
#
#   bench/keys/run.sh                    # the full run (20-40 minutes on 2 cores)
#   ROWS=100000 bench/keys/run.sh        # a quick check
#
# Without SNOWFENCE_TEST_POSTGRES_URL it starts Debian's PostgreSQL through
# scripts/services/postgres.sh, applies the settings below (ALTER SYSTEM,
# then a restart), and stops it at the end. With the URL it uses that
# server as it is: the program prints its settings and refuses one with
# full_page_writes off.
#
# Outputs: $DOCS/key-cost.md and $DOCS/key-cost.png (DOCS default docs),
# raw numbers in $RESULTS/keys-<date>[-rows<ROWS>].{json,csv} (RESULTS default
# bench/results). TIMEOUT (default 60m) bounds the whole measurement. Extra
# arguments go to the program (cd bench && go run ./keys -h lists them).
#
# To rewrite the report and plot from an earlier run's numbers, no server
# needed:
#   (cd bench && go run ./keys -render ../bench/results/keys-<date>.json \
#       -md ../docs/key-cost.md -png ../docs/key-cost.png)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

ROWS="${ROWS:-10000000}"
DOCS="${DOCS:-docs}"
RESULTS="${RESULTS:-bench/results}"
TIMEOUT="${TIMEOUT:-60m}"
command="bench/keys/run.sh"
[[ "$ROWS" == 10000000 ]] || command="ROWS=$ROWS $command"
suffix="$(date -u +%F)"
[[ "$ROWS" == 10000000 ]] || suffix="$suffix-rows$ROWS"
mkdir -p "$DOCS" "$RESULTS"

# The settings the report relies on. full_page_writes = on matters most:
# a random key's insert touches an index page no earlier insert since the
# checkpoint touched, and its first change after a checkpoint logs the whole
# page. postgres.sh's test defaults (fsync, synchronous_commit and
# full_page_writes off) are overridden here.
settings=(
	"shared_buffers = '4GB'"
	"wal_level = 'replica'"
	"full_page_writes = on"
	"wal_compression = off"
	"synchronous_commit = on"
	"fsync = on"
	"max_wal_size = '1GB'"
	"min_wal_size = '80MB'"
	"checkpoint_timeout = '5min'"
	"checkpoint_completion_target = 0.9"
	"autovacuum = off"
)

tmp="$(mktemp -d)"
started=""
cleanup() {
	if [[ -n "$started" ]]; then
		scripts/services/postgres.sh stop || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

url="${SNOWFENCE_TEST_POSTGRES_URL:-}"
if [[ -z "$url" ]]; then
	export SNOWFENCE_POSTGRES_STATE="${SNOWFENCE_POSTGRES_STATE:-$tmp/pg.state}"
	if scripts/services/postgres.sh status 2>/dev/null; then
		echo "run.sh: a PostgreSQL already runs with state $SNOWFENCE_POSTGRES_STATE; give its URL in SNOWFENCE_TEST_POSTGRES_URL or use another SNOWFENCE_POSTGRES_STATE" >&2
		exit 1
	fi
	url="$(scripts/services/postgres.sh start)"
	started=1
	# shellcheck disable=SC1090
	source "$SNOWFENCE_POSTGRES_STATE" # PGDIR, PORT
	bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
	for s in "${settings[@]}"; do
		"$bin/psql" "$url" -X -q -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET $s"
	done
	owner=()
	[[ "$(id -u)" == 0 ]] && owner=(runuser -u postgres --)
	"${owner[@]}" "$bin/pg_ctl" restart -w -t 120 -m fast -D "$PGDIR/data" -l "$PGDIR/server.log" >&2
fi

(cd bench && go build -o "$tmp/keys" ./keys)
"$tmp/keys" -url "$url" -rows "$ROWS" -timeout "$TIMEOUT" -command "$command" \
	-md "$DOCS/key-cost.md" -png "$DOCS/key-cost.png" \
	-json "$RESULTS/keys-$suffix.json" -csv "$RESULTS/keys-$suffix.csv" "$@"
