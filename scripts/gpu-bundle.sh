#!/usr/bin/env bash
# Packs the GPU build (libfnk, which holds the compiler with LLVM, ANTLR's
# runtime and the C++ runtime linked in and needs only libc and libm, and the
# fnk and fnkc launchers that call it, all stripped: about 32 MB) into
# .gpu-bin/bundle.tgz for the GPU machine, which has CUDA but no LLVM:
#   scripts/gpu-bundle.sh [BUILD_DIR]        (default build-gpu)
# On the GPU machine: tar -xzf .gpu-bin/bundle.tgz -C DIR; FNK=DIR/fnk.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in fnk fnkc libfnk.so; do
  strip -o "$stage/$f" "$build/$f"
done
mkdir -p .gpu-bin
tar -czf .gpu-bin/bundle.tgz -C "$stage" .
ls -l .gpu-bin/bundle.tgz
