#!/bin/bash
# ncu stall reasons for chosen bench/tune.py --variants configs: for the first
# kernel each config launches, the cycles a warp waits per issued instruction
# by reason, the issue rate, occupancy, registers, instructions executed.
# With --lines, where instead: ncu's source page (stall samples per SASS line)
# summarized by tests/gpu/hot_lines.py, the lines warps wait at most and why.
# Output under $OUT (default /tmp/fnk-gpu-out), a summary on stdout.
#   tests/gpu/stalls.sh [--lines] "WORKLOAD CONFIG" ...   (as tune.py --only matches them)
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/gpu/env.sh
profile_setup
lines=0
if [ "${1:-}" = "--lines" ]; then lines=1; shift; fi
rc=0
for only in "$@"; do
  tag=$(plain_name "$only")
  echo "== $only"
  if [ $lines = 1 ]; then
    ncu_tune "$OUT/lines_$tag.csv" 1 "$only" --section SourceCounters --page source --print-source sass --csv
    python3 tests/gpu/hot_lines.py "$OUT/lines_$tag.csv" || rc=1
    continue
  fi
  ncu_tune "$OUT/stall_$tag.txt" 1 "$only" \
    --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio',smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,gpu__time_duration.sum,smsp__inst_executed.sum
  grep -E "^\s+(ln|rms|dit|layer)|stalled|issue_active|warps_active|registers|duration|inst_executed" "$OUT/stall_$tag.txt" | awk '$NF+0 > 0.05 || /\(/' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -40
done
exit $rc
