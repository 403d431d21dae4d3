#!/usr/bin/env bash
# Builds fnk and runs every test that needs no GPU: unit tests, golden (lit)
# tests, diagnostics tests, the language-doc check, and a bounded fuzzing run
# of the front end under ASan/UBSan. Usage: scripts/test.sh [--no-fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-120}

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$JOBS"
ctest --test-dir build --output-on-failure -j "$JOBS"

if [ "${1:-}" != "--no-fuzz" ]; then
  # The fuzzer needs clang's libFuzzer; it runs over a corpus seeded with
  # every .fnk file in the tree, for a bounded time.
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFNK_FUZZ=ON -DFNK_TESTS=OFF -DFNK_GPU=OFF
  cmake --build build-fuzz -j "$JOBS" --target fnk_fuzz_frontend
  corpus=$(mktemp -d)
  i=0
  while IFS= read -r f; do
    case "$f" in
      *.fnkir) { printf '\x01'; cat "$f"; } > "$corpus/seed$i" ;;
      *) { printf '\x00'; cat "$f"; } > "$corpus/seed$i" ;;
    esac
    i=$((i + 1))
  done < <(find stdlib examples tests bench -name '*.fnk' -o -name '*.fnkir')
  ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/fnk_fuzz_frontend "$corpus" -max_total_time="$FUZZ_SECONDS" \
    -timeout=10 -rss_limit_mb=4096 -max_len=4096 -print_final_stats=1 2>&1 | tail -25
  echo "fuzz: ${FUZZ_SECONDS}s over the front end and IR parser, no crash"
fi
