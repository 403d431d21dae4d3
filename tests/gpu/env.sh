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
