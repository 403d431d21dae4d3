#!/bin/bash
set -u
source tests/gpu/env.sh
export FNK_CACHE_DIR=/tmp/fnkcache
mkdir -p $OUT
"$FNKC" tests/gpu/lang.fnk -k lang_wait --emit=header -o $OUT/lang_wait.h
"$FNKC" stdlib/norm/rmsnorm.fnk -k rmsnorm_fwd -D T=f32 --emit=header -o $OUT/rmsnorm_fwd.h
grep -v "a wait would never end" $OUT/lang_wait.h > $OUT/lang_wait_nocheck.h
diff $OUT/lang_wait.h $OUT/lang_wait_nocheck.h
for h in lang_wait lang_wait_nocheck; do
  g++ -O1 -std=c++17 -I/usr/local/cuda/include -DFNK_HEADER="\"$OUT/rmsnorm_fwd.h\"" -DFNK_WAIT_HEADER="\"$OUT/$h.h\"" \
    tests/gpu/aot_header_test.cpp -o $OUT/aot_$h -L/usr/local/cuda/lib64/stubs -lcuda && (time timeout 120 $OUT/aot_$h); echo "$h exit $?"
done
bash tests/gpu/stalls.sh --lines "DiT bwd 56x1024x1024 stdlib SB=14 WARPS=4" "LayerNorm bwd 32768x8192 (dx, partials) stdlib WARPS=16 P=1x" 2>&1 | tail -60
