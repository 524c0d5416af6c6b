#!/usr/bin/env bash
# snowfence dups beside GNU sort | uniq -d on the same file, in the same run,
# alternating, RUNS times each; wall time and peak RSS from /usr/bin/time -v,
# medians at the end. The input (N IDs, about 19 bytes a line) is generated
# under WORK and deleted on exit.
#   bench/dups/run.sh                       # 100 million IDs, 3 runs
#   N=10000000 RUNS=5 bench/dups/run.sh     # smaller
# Output: one line per run, then the medians; bench/results/dups-*.txt keeps one.
set -euo pipefail
cd "$(dirname "$0")/.." # the bench module
N=${N:-100000000}
RUNS=${RUNS:-3}
WORK=${WORK:-/tmp/snowfence-dups-bench}
MEMORY=${MEMORY:-512MiB}
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

(cd .. && go build -o "$WORK/snowfence" ./cmd/snowfence) # the root module
go build -o "$WORK/gen" ./dups/gen
"$WORK/gen" -n "$N" -dups 1000 -seed 1 >"$WORK/ids.txt" 2>"$WORK/planted.txt"
echo "input: $N IDs, $(stat -c %s "$WORK/ids.txt") bytes; $(cat "$WORK/planted.txt")"
echo "machine: $(nproc) cores, $(sort --version | head -1), $(go version)"
want=$(awk '{print $2}' "$WORK/planted.txt")

# measure NAME CMD…: runs CMD under /usr/bin/time -v, its stdout to a file,
# and prints NAME, wall seconds, peak RSS in KiB, CPU seconds (user + system),
# the duplicate lines found and the load average (the cores are shared).
measure() {
	local name=$1
	shift
	sync
	/usr/bin/time -v -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || true
	local wall cpu rss found
	cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$WORK/time")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$WORK/time")
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time")
	found=$(wc -l <"$WORK/out")
	if [ "$found" != "$want" ]; then
		echo "$name found $found duplicate lines, want $want" >&2
		cat "$WORK/err" >&2
		exit 1
	fi
	echo "$name wall_s=$wall maxrss_kib=$rss cpu_s=$cpu found=$found load=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$WORK/runs"
}

: >"$WORK/runs"
for i in $(seq "$RUNS"); do
	measure dups "$WORK/snowfence" dups "$WORK/ids.txt" --memory "$MEMORY" --tmp "$WORK"
	measure sort sh -c "LC_ALL=C sort -T '$WORK' '$WORK/ids.txt' | uniq -d"
	measure sort-S512M sh -c "LC_ALL=C sort -S 512M -T '$WORK' '$WORK/ids.txt' | uniq -d"
	tail -3 "$WORK/runs" | awk -v i="$i" '{split($2, w, "="); t[$1] = w[2]} END {printf "run %d: sort/dups %.1f, sort-S512M/dups %.1f\n", i, t["sort"] / t["dups"], t["sort-S512M"] / t["dups"]}'
done

# median FIELD NAME: the median of FIELD (2 wall, 3 rss, 4 cpu) over NAME's runs.
median() {
	awk -v f="$1" -v name="$2" '$1 == name {split($f, v, "="); print v[2]}' "$WORK/runs" | sort -n |
		awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
echo "medians of $RUNS runs:"
for name in dups sort sort-S512M; do
	echo "$name wall_s=$(median 2 "$name") maxrss_kib=$(median 3 "$name") cpu_s=$(median 4 "$name")"
done | tee "$WORK/medians"
awk '{split($2, w, "="); t[$1] = w[2]} END {printf "median wall ratio: sort/dups %.1f, sort-S512M/dups %.1f\n", t["sort"] / t["dups"], t["sort-S512M"] / t["dups"]}' "$WORK/medians"
