#!/usr/bin/env bash
# Configures and builds ffn.cpp (Release) into build/ — or into $1 with extra CMake args.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build "$build_dir" -j "$(nproc)"
