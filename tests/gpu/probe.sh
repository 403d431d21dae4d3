#!/bin/bash
# GPU probe: Inductor's kernels for the norm workloads (sources, configs, PTX)
# and ncu sections for fnk and torch.compile (bench/peer_probe.py), under $OUT.
#   tests/gpu/probe.sh [--only NAME] [--no-ncu]
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/gpu/env.sh
profile_setup
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri
only=(); ncu=1
while [ $# -gt 0 ]; do case "$1" in --only) only=(--only "$2"); shift;; --no-ncu) ncu=0;; esac; shift; done
timeout 200 python3 bench/peer_probe.py "${only[@]}" > $OUT/probe.log 2>&1; echo "probe rc=$?"
(cd /tmp && tar -czf $OUT/inductor.tgz ind tri 2>/dev/null); ls -la $OUT/inductor.tgz
if [ $ncu = 1 ]; then
  timeout 300 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 bench/peer_probe.py "${only[@]}" > $OUT/ncu.txt 2>&1
  echo "ncu rc=$?"
  grep -cE "Section: GPU Speed" $OUT/ncu.txt
fi
