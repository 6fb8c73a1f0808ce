#!/usr/bin/env bash
# The whole test suite: install what is needed, build, and run every test — the C++ unit
# tests on every ISA this CPU has, the golden suite against PyTorch, the install check, the
# fuzz regression inputs — then the unit tests, the regression inputs and the golden tests
# of the ffn command again under AddressSanitizer and UndefinedBehaviorSanitizer (clang, in
# the fuzzers' build), the threaded tests under ThreadSanitizer, a short run of every fuzz
# target (scripts/fuzz.sh; longer runs: scripts/fuzz.sh SECONDS), and the aarch64 build's
# tests under qemu-user (scripts/test-aarch64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python=$(scripts/python-env.sh)  # Debian's Python and PyTorch, plus tests/requirements.txt from PyPI
jobs=$(nproc)
# Ninja for every build folder made here (one kept from before keeps its generator): the
# targets a stage names are built as one graph, not one after another.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}

echo "== build (Release) and test"
# Through ccache, so that the wheel's build below (the same compiler and flags for the library
# and the command) takes these objects instead of compiling them again.
scripts/build.sh build -DFFN_BUILD_TESTS=ON -DFFN_TEST_PYTHON="$python" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
ctest --test-dir build --output-on-failure -j "$jobs"
# (The tests under mpirun ran in the Release build above.)

echo "== pip install . into a fresh virtual environment, then import ffn and python -m ffn params"
# The wheel's own CMake build is kept in build-pip/ (incremental after the first run); its
# objects come from ccache, filled by the Release build above, when the compiler is named as
# there (ccache keys on the name: scikit-build-core would otherwise take Python's
# sysconfig CXX, x86_64-linux-gnu-g++). The build backend is build-venv's pinned
# scikit-build-core (--no-build-isolation), so only the first run needs PyPI.
release_cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
FFN_TEST_PIP_INSTALL=1 FFN_PIP_NO_ISOLATION=1 FFN_PIP_BUILD_DIR="$PWD/build-pip" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
  CXX="$release_cxx" CMAKE_CXX_COMPILER_LAUNCHER=ccache "$python" -m pytest -q -p no:cacheprovider tests/golden/test_torch_pip_install.py

echo "== build with clang, ASan+UBSan: the unit tests, the fuzz regression inputs, the ffn command, the fuzz targets"
# One sanitizer build serves the unit tests and the fuzzers (scripts/fuzz.sh below reuses it):
# libFuzzer's coverage hooks leave out the compute and the tests
# (fuzz/coverage_ignorelist.txt), so the unit tests run at plain ASan speed; clang builds it
# in about half the time gcc's ASan build took, and one build instead of two.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFFN_FUZZ=ON -DFFN_BUILD_TESTS=ON -DFFN_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j "$jobs" --target ffn_unit_tests ffn_cli_unit_tests ffn_fuzz_replays ffn_cli \
  ffn_readme_example fuzz_safetensors fuzz_gguf fuzz_npy fuzz_index fuzz_cli
# Left out besides the PyTorch, install and mpirun tests: the scalar level's thread-count and
# batch test (75 s at -O1 under ASan, the stage's longest). Bit-identity across threads is its
# subject, checked on every level in the Release build above; the scalar kernels' accesses at
# 2 threads are exercised here by the contract tests of every type and variant on that level
# (the 32-value block, 16-bit and f32 types up to 515 tokens, the K-quants up to 20).
ctest --test-dir build-fuzz --output-on-failure -j "$jobs" \
  -E "golden_pytorch|install_consumer|mpi_np|InferenceTypes.BitIdenticalForAnyThreadCountAndBatch/scalar"
echo "== the golden tests that drive the ffn command, with the ASan+UBSan ffn"
# Without the Python module (an ASan-built extension would need libasan preloaded into
# Python and PyTorch); the two slowest tests spend their time building PyTorch modules up to
# d = 5120, not in ffn, and are left out.
FFN_BIN=$PWD/build-fuzz/tools/ffn/ffn FFN_PYTHONPATH="" "$python" -m pytest -q -p no:cacheprovider \
  tests/golden/test_cli.py tests/golden/test_golden.py tests/golden/test_checkpoints.py \
  -k "not the_seeds_default_hidden_sizes and not params_prints_the_seeds_numbers"

echo "== build with TSan and run the threaded tests"
cmake -S . -B build-tsan -DFFN_BUILD_TESTS=ON -DFFN_TSAN=ON -DFFN_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-tsan -j "$jobs" --target ffn_threaded_tests
ctest --test-dir build-tsan --output-on-failure -R threaded_tests_tsan

echo "== fuzz every file reader and the command line briefly (libFuzzer, ASan+UBSan; the build above)"
scripts/fuzz.sh 15

# The aarch64 build, its unit tests under qemu-user at three CPU models, and the golden tests
# of the ffn command with the emulated binary.
scripts/test-aarch64.sh "$python"
