#!/usr/bin/env bash
# The whole test suite: install what is needed, build, and run every test — the C++ unit
# tests on every ISA this CPU has, the golden suite against PyTorch, the install check —
# then the unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer, then a
# short run of every fuzz target (scripts/fuzz.sh; longer runs: scripts/fuzz.sh SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== build (Release) and test"
scripts/build.sh build -DFFN_BUILD_TESTS=ON
ctest --test-dir build --output-on-failure -j "$jobs"

# (It builds ffn_unit_tests only; the tests under mpirun ran in the Release build above.)
echo "== build with ASan+UBSan and run the unit tests"
cmake -S . -B build-sanitize -DFFN_BUILD_TESTS=ON -DFFN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-sanitize -j "$jobs" --target ffn_unit_tests
ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -E "golden_pytorch|install_consumer|mpi_np"

echo "== fuzz every file reader briefly (libFuzzer, ASan+UBSan)"
scripts/fuzz.sh 15
