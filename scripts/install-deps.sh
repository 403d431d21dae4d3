#!/usr/bin/env bash
# Installs the Debian packages fnk builds and tests with (run as root, or with sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ clang libclang-rt-14-dev lld \
  antlr4 libantlr4-runtime-dev libfmt-dev libgtest-dev libbenchmark-dev \
  llvm-22-dev llvm-22-tools libzstd-dev zlib1g-dev \
  python3 python3-numpy python3-pytest libedit-dev
