source tests/gpu/env.sh; export FNK_CACHE_DIR=/tmp/fnkcache; mkdir -p $OUT/logs
FNK_CHECK_ONLY=rmsnorm_bwd_split,layernorm_bwd_split timeout 150 python3 tests/gpu/run_checks.py "$FNK" $OUT/logs/chk > $OUT/logs/checks.log 2>&1
echo "checks rc=$?"; tail -1 $OUT/logs/checks.log; grep -E "^FAIL|<-- FAIL" $OUT/logs/checks.log | head -5
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch.py > $OUT/logs/torch.log 2>&1
echo "torch rc=$?"; tail -3 $OUT/logs/torch.log; grep -E "^FAILED|Error" $OUT/logs/torch.log | head -5
K=rmsnorm_bwd_split_acc
timeout 130 python3 bench/bwd_probe.py --norm rms --shape 8192x8191 --shape 4096x16383 --shape 2048x32767 --rounds 2 --reps 20 \
  --case 8191:$K:BLOCK_N=4096,CLUSTER=2,WARPS=8,L2=2,per_sm=2,cluster=2 \
  --case 16383:$K:BLOCK_N=8192,CLUSTER=2,WARPS=16,per_sm=1,cluster=2 \
  --case 32767:$K:BLOCK_N=4096,CLUSTER=8,WARPS=8,per_sm=8,cluster=8 > $OUT/logs/probe.log 2>&1
echo "probe rc=$?"; grep "us \|bf16\|rror" $OUT/logs/probe.log | tail -24
K=layernorm_bwd_split_acc
timeout 100 python3 bench/bwd_probe.py --norm ln --shape 4096x16383 --shape 2048x32767 --rounds 2 --reps 20 \
  --case 16383:$K:BLOCK_N=8192,CLUSTER=2,WARPS=16,per_sm=1,cluster=2 \
  --case 32767:$K:BLOCK_N=4096,CLUSTER=8,WARPS=8,per_sm=8,cluster=8 > $OUT/logs/probe_ln.log 2>&1
echo "probe ln rc=$?"; grep "us \|bf16\|rror" $OUT/logs/probe_ln.log | tail -16
