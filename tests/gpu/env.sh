# shellcheck shell=bash
# Sourced by the GPU scripts (run.sh, inspect.sh, probe.sh) from the repo root:
# picks the fnk build to use and exports what its tools and Python need.
#   FNK=path/to/fnk       use that build (fnkc and libfnk.so beside it)
#   otherwise             .gpu-bin/bundle.tgz (scripts/gpu-bundle.sh), unpacked
#                         under $FNK_GPU_BIN (default /tmp/fnk-gpu-bin), else
#                         build-gpu/ or build/
FNK=${FNK:-}
if [ -z "$FNK" ] && [ -f .gpu-bin/bundle.tgz ]; then
  FNK_GPU_BIN=${FNK_GPU_BIN:-/tmp/fnk-gpu-bin}
  mkdir -p "$FNK_GPU_BIN" && tar -xzf .gpu-bin/bundle.tgz -C "$FNK_GPU_BIN" && FNK=$FNK_GPU_BIN/fnk
fi
if [ -z "$FNK" ]; then
  for f in build-gpu/fnk build/fnk; do [ -x "$f" ] && FNK=$PWD/$f && break; done
fi
FNKC=${FNKC:-${FNK:+$(dirname "$FNK")/fnkc}}
export FNK FNKC FNK_STDLIB=${FNK_STDLIB:-$PWD/stdlib} FNK_BUILD_DIR=${FNK:+$(dirname "$FNK")} PYTHONUNBUFFERED=1

# The profiling scripts' output folder (OUT, default /tmp/fnk-gpu-out) and
# kernel cache (inspect.sh, probe.sh, stalls.sh, ncu_cmp.sh).
profile_setup() {
  OUT=${OUT:-/tmp/fnk-gpu-out}
  mkdir -p "$OUT"
  export OUT FNK_CACHE_DIR=${FNK_CACHE_DIR:-/tmp/fnkcache}
}

# A name the device tool keeps (letters, digits, _) for a tune.py config string.
plain_name() { echo "$1" | tr -c 'A-Za-z0-9' '_'; }

# ncu over the first COUNT fnk kernels that `bench/tune.py --variants --only
# ONLY` launches, the clocks left alone, into OUTFILE (inspect.sh, stalls.sh):
#   ncu_tune OUTFILE COUNT ONLY NCU_ARGS...
ncu_tune() {
  local out=$1 count=$2 only=$3
  shift 3
  timeout 150 ncu --clock-control none -k regex:'^(rms|ln|dit|layer)' -c "$count" "$@" \
    python3 bench/tune.py --variants --reps 1 --only "$only" --out /tmp/t > "$out" 2>&1
}

