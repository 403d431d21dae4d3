#!/bin/bash
# ncu metrics of chosen bench/tune.py --variants configs, each under its own
# environment (a compiler knob), one block per run: duration, DRAM bytes and
# throughput, L2 hit rates, issue rate, registers, instructions, and the stall
# reasons per issued instruction. For "why is this setting slower" questions
# (docs/perf-notes.md, GPU backend v10, item 5). Output under $OUT (default
# /tmp/fnk-gpu-out), a summary on stdout.
#   tests/gpu/ncu_cmp.sh "ENV|WORKLOAD CONFIG" ...
# ENV is NAME=VALUE[,NAME=VALUE] or "-" for none, e.g.
#   tests/gpu/ncu_cmp.sh "FNK_FULL_TILES=0|LayerNorm fwd 32768x8192 staged WARPS=16 CTAS=1 S=4" \
#                        "-|LayerNorm fwd 32768x8192 staged WARPS=16 CTAS=1 S=4"
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/gpu/env.sh
profile_setup
stalls=""
for s in barrier long_scoreboard short_scoreboard wait branch_resolving no_instruction mio_throttle lg_throttle membar; do
  stalls+=",smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
metrics="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum"
metrics+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_op_read_hit_rate.pct"
metrics+=",lts__t_sector_op_write_hit_rate.pct,smsp__issue_active.avg.pct_of_peak_sustained_active"
metrics+=",launch__registers_per_thread,smsp__inst_executed.sum$stalls"
rc=0
for spec in "$@"; do
  envs=${spec%%|*}
  only=${spec#*|}
  if [ "$envs" = "$spec" ]; then echo "FAIL: '$spec' is not ENV|CONFIG"; rc=1; continue; fi
  file="$OUT/ncu_$(plain_name "$envs $only").txt"
  echo "== $envs $only"
  (
    if [ "$envs" != "-" ]; then
      IFS=, read -ra kv <<< "$envs"
      for e in "${kv[@]}"; do export "${e?}"; done
    fi
    ncu_tune "$file" 1 "$only" --metrics "$metrics"
  ) || rc=1
  grep -E "__" "$file" | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '{print "  " $1, $NF}'
done
exit $rc
