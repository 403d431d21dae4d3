#!/bin/bash
# Registers, spills and SASS size of fnk kernels (ptxas -v on fnkc's PTX), then
# ncu sections for chosen tune.py configs. Output under $OUT.
#   tests/gpu/inspect.sh 'file:kernel:-D A=1 -D B=2' ... [-- ONLY...]
set -u
source tests/gpu/env.sh
export FNK_CACHE_DIR=${FNK_CACHE_DIR:-/tmp/fnkcache}
mkdir -p $OUT/ptx
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  IFS=: read -r file kernel defs <<< "$1"; shift
  tag=$(echo "$kernel$defs" | tr -c 'A-Za-z0-9_' '_')  # plain names: the device tool drops odd ones
  "$FNKC" "$file" -k "$kernel" $defs --emit=ptx -o $OUT/ptx/$tag.ptx || continue
  ptxas -arch=sm_90a -O3 -v $OUT/ptx/$tag.ptx -o /tmp/$tag.cubin 2>&1 | grep -E "registers|spill" | tr '\n' ' ' | sed "s/^/$tag: /"; echo
  cuobjdump -sass /tmp/$tag.cubin > $OUT/ptx/$tag.sass 2>/dev/null
done
[ $# -gt 0 ] && shift
for only in "$@"; do
  timeout 120 ncu --clock-control none -k regex:'^(rms|ln|dit|layer)' -c 3 --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    python3 bench/tune.py --variants --reps 1 --only "$only" --out /tmp/t > "$OUT/ncu_$(echo $only | tr -c 'A-Za-z0-9' '_').txt" 2>&1
  echo "ncu $only rc=$?"
done
