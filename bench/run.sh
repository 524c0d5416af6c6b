#!/usr/bin/env bash
# Minting benchmarks, snowfence beside its peers, 10 runs each, summarised by
# benchstat (medians with confidence intervals). Output in bench/out/.
#   bench/run.sh            # all benchmarks
#   bench/run.sh 'NextN'    # a subset (a -bench regexp)
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p out
pattern=${1:-.}
go test -run '^$' -bench "$pattern" -count "${COUNT:-10}" -benchtime "${BENCHTIME:-1s}" . | tee out/mint.txt
go tool benchstat out/mint.txt | tee out/mint-benchstat.txt
