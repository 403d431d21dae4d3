source tests/gpu/env.sh
export FNK_CACHE_DIR=/tmp/fnkcache
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__inst_executed.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum
for spec in "0|LayerNorm fwd 32768x8192 1p WARPS=8 CTAS=1 S=4" "1|LayerNorm fwd 32768x8192 1p WARPS=8 CTAS=1 S=4" "1|LayerNorm fwd 32768x8192 1p WARPS=16 CTAS=1 S=4"; do
  v=${spec%%|*}; only=${spec#*|}
  echo "== FNK_VERSION=$v $only"
  FNK_VERSION=$v ncu_tune $OUT/ncu_${v}_$(plain_name "$only").txt 1 "$only" --metrics $M
  grep -E "^\s+(ln|rms|dit|layer)|__" $OUT/ncu_${v}_$(plain_name "$only").txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | awk '{print $1, $(NF)}'
done
