#!/bin/bash
# Registers, spills and SASS size of fnk kernels (ptxas -v on fnkc's PTX), then
# ncu sections for chosen tune.py configs. Output under $OUT.
#   tests/gpu/inspect.sh 'file:kernel:-D A=1 -D B=2' ... [-- ONLY...]
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/gpu/env.sh
profile_setup
mkdir -p $OUT/ptx
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  IFS=: read -r file kernel defs <<< "$1"; shift
  tag=$(plain_name "$kernel$defs")  # plain names: the device tool drops odd ones
  "$FNKC" "$file" -k "$kernel" $defs --emit=ptx -o $OUT/ptx/$tag.ptx || continue
  ptxas -arch=sm_90a -O3 -v $OUT/ptx/$tag.ptx -o /tmp/$tag.cubin 2>&1 | grep -E "registers|spill" | tr '\n' ' ' | sed "s/^/$tag: /"; echo
  cuobjdump -sass /tmp/$tag.cubin > $OUT/ptx/$tag.sass 2>/dev/null
done
[ $# -gt 0 ] && shift
for only in "$@"; do
  ncu_tune "$OUT/ncu_$(plain_name "$only").txt" 3 "$only" --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats
  echo "ncu $only rc=$?"
done
