#!/bin/bash
# GPU tests: every stdlib kernel and example with `fnk run --device gpu --check`
# over ragged shapes (bf16 and f32), fnk.torch against torch on CUDA tensors,
# then bench/bench.py: every norm workload of PERFORMANCE.md against torch eager
# and torch.compile in one process. Prints PASS/FAIL/
# SKIP lines and tables; logs go under $OUT (or /tmp/fnk-gpu-out).
# Without a GPU (no nvidia-smi or no libcuda.so.1) it prints SKIP and exits 0.
#
#   tests/gpu/run.sh [--quick] [--no-bench] [--no-checks]
# FNK=path/to/fnk selects the binary (default .gpu-bin/fnk, else build-gpu/fnk).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/fnk-gpu-out}
mkdir -p "$OUT"
FNK=${FNK:-}
if [ -z "$FNK" ]; then
  for f in .gpu-bin/fnk build-gpu/fnk build/fnk; do [ -x "$f" ] && FNK=$PWD/$f && break; done
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then echo "SKIP gpu tests: no nvidia-smi (no GPU here)"; exit 0; fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1' && [ ! -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
  echo "SKIP gpu tests: no libcuda.so.1 (no CUDA driver)"; exit 0
fi
if [ -z "$FNK" ]; then echo "FAIL: no fnk binary (build with FNK_GPU=ON, or set FNK=)"; exit 1; fi
if ! python3 -c 'import numpy' 2>/dev/null; then echo "SKIP gpu tests: python3 without numpy"; exit 0; fi
quick=""; bench=1; checks=1
for a in "$@"; do
  case "$a" in --quick) quick=--quick;; --no-bench) bench=0;; --no-checks) checks=0;; esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
rc=0
if [ $checks = 1 ]; then
  PYTHONUNBUFFERED=1 python3 tests/gpu/run_checks.py "$FNK" "$OUT" $quick || rc=1
fi
if [ $checks = 1 ]; then
  # fnkc --emit=header, used by a plain C++ program with only the driver API.
  FNKC=${FNKC:-$(dirname "$FNK")/fnkc}
  if [ -x "$FNKC" ] && command -v g++ >/dev/null && [ -e /usr/local/cuda/include/cuda.h ]; then
    "$FNKC" stdlib/norm/rmsnorm.fnk -k rmsnorm_fwd -D T=f32 --emit=header -o "$OUT/rmsnorm_fwd.h" &&
      g++ -O1 -std=c++17 -I/usr/local/cuda/include -DFNK_HEADER="\"$OUT/rmsnorm_fwd.h\"" tests/gpu/aot_header_test.cpp \
        -o "$OUT/aot_header_test" -L/usr/local/cuda/lib64/stubs -lcuda && "$OUT/aot_header_test" || rc=1
  else
    echo "SKIP aot header: needs fnkc next to fnk, g++ and cuda.h"
  fi
fi
if [ $checks = 1 ] && python3 -c 'import torch' 2>/dev/null; then
  # The Python package on torch CUDA tensors: fnk.torch against torch's norms.
  FNK_BUILD_DIR=$(dirname "$FNK") PYTHONUNBUFFERED=1 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch.py 2>&1 \
    | tee "$OUT/torch_tests.log" | tail -15 || rc=1
  grep -qE "[0-9]+ passed" "$OUT/torch_tests.log" && ! grep -qE "[0-9]+ failed|error" "$OUT/torch_tests.log" || rc=1
fi
if [ $bench = 1 ]; then
  FNK_BUILD_DIR=$(dirname "$FNK") PYTHONUNBUFFERED=1 python3 bench/bench.py --out "$OUT" $quick 2>&1 | tee "$OUT/bench.log"
  grep -q '^MISMATCH' "$OUT/bench.log" && rc=1
fi
exit $rc
