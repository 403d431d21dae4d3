#!/usr/bin/env bash
# Builds fnk and runs the stdlib RMSNorm on random arrays in the interpreter,
# then compares with NumPy in float64.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target fnk fnkc
tmp=$(mktemp -d)
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng()
np.save(f"{d}/x.npy", rng.standard_normal((64, 1000)).astype(np.float32))
np.save(f"{d}/w.npy", rng.standard_normal(1000).astype(np.float32))
PY
./build/fnk run stdlib/norm/rmsnorm.fnk --kernel rmsnorm_fwd --const T=f32 --const BLOCK_N=256 \
  --in x="$tmp/x.npy" --in w="$tmp/w.npy" --arg eps=1e-6 --out y="$tmp/y.npy" --out rstd="$tmp/rstd.npy"
/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]
x = np.load(f"{d}/x.npy").astype(np.float64); w = np.load(f"{d}/w.npy").astype(np.float64)
r = 1 / np.sqrt((x * x).mean(axis=1) + 1e-6)
err = np.abs(np.load(f"{d}/y.npy") - x * r[:, None] * w).max()
print(f"rmsnorm_fwd 64x1000 f32 in the interpreter: max |fnk - numpy float64| = {err:.3g}")
sys.exit(0 if err < 1e-4 else 1)
PY
