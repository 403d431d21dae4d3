#!/bin/bash
# Per-SASS-line stall samples for chosen bench/tune.py --variants configs
# (ncu's source page), summarized by tests/gpu/hot_lines.py: for the first
# kernel each config launches, the lines where warps wait most and why.
# Output under $OUT (default /tmp/fnk-gpu-out), a summary on stdout.
#   tests/gpu/hot_lines.sh "WORKLOAD CONFIG" ...   (as tune.py --only matches them)
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/fnk-gpu-out}
mkdir -p "$OUT"
source tests/gpu/env.sh
export FNK_CACHE_DIR=${FNK_CACHE_DIR:-/tmp/fnkcache}
rc=0
for only in "$@"; do
  tag=$(plain_name "$only")
  ncu_tune "$OUT/lines_$tag.csv" 1 "$only" --section SourceCounters --page source --print-source sass --csv
  echo "== $only"
  python3 tests/gpu/hot_lines.py "$OUT/lines_$tag.csv" || rc=1
done
exit $rc
