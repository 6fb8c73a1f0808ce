#!/usr/bin/env bash
# The aarch64 stage of the test suite (scripts/test.sh runs it; it also runs alone): builds
# the library, the unit tests, the ffn command and the fuzz replays for 64-bit Arm Linux with
# Debian's cross compiler (cmake/aarch64-linux-gnu.cmake) and runs them under qemu-user at
# three CPU models —
#   max          every level of the list: neon, dotprod, i8mm, bf16 (and SVE, which ffn
#                does not use): the whole unit suite, every ISA-parameterised test on every
#                Arm level, the fuzz regression inputs and the README's example;
#   neoverse-n1  dotprod, no i8mm or bf16 (Graviton 2, Ampere Altra);
#   cortex-a72   plain Advanced SIMD (Raspberry Pi 4);
# at the two smaller models the tests whose outcome depends on the CPU: detection and the
# kernels of every level it has (a kernel using an instruction of a wider level would stop
# there with SIGILL, which `max` cannot show) — then the golden tests that drive the ffn
# command, with the emulated aarch64 ffn (at max), so that PyTorch's goldens judge the Arm
# kernels too. Emulation says nothing about speed: no timing here means anything.
# --full: also the forward of every weight type and variant through whole inference blocks
# (InferenceTypes, PackedForward, MoeForward) on every Arm level — about 20 minutes of CPU
# under qemu, too long for the test command, which leaves them out (see below).
# Then $1: the Python to run the golden tests with (default: scripts/python-env.sh's).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
if [ "${1:-}" = "--full" ]; then
  full=1
  shift
fi
scripts/install-deps.sh --aarch64
python=${1:-$(scripts/python-env.sh)}
jobs=$(nproc)
build=build-aarch64

echo "== aarch64: cross build (library, unit tests, ffn, fuzz replays)"
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DFFN_BUILD_TESTS=ON -DFFN_BUILD_PYTHON=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON > /dev/null
cmake --build "$build" -j "$jobs" --target ffn_unit_tests ffn_cli_unit_tests ffn_fuzz_replays ffn_cli \
  ffn_readme_example

# The loader finds the target's libraries by LD_LIBRARY_PATH (cmake/aarch64-linux-gnu.cmake says why).
qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu)
logs=$build/qemu-logs
mkdir -p "$logs"

# A test binary under qemu at CPU model $1 with gtest filter $2, in one process per core
# (gtest's sharding): starting the emulated binary costs about a second, so one process
# per test, as ctest runs them, would spend most of the stage starting processes.
unit_tests() {
  local cpu=$1 filter=$2 binary=$3 name pids=() failed=0
  name=$(basename "$binary")
  for ((shard = 0; shard < jobs; ++shard)); do
    QEMU_CPU=$cpu GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$shard \
      "${qemu[@]}" "$binary" --gtest_brief=1 --gtest_filter="$filter" > "$logs/$name-$cpu-$shard.log" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < jobs; ++shard)); do
    if ! wait "${pids[$shard]}"; then
      failed=1
      cat "$logs/$name-$cpu-$shard.log"
    fi
  done
  for ((shard = 0; shard < jobs; ++shard)); do grep -h "^\[  PASSED  \]\|^\[  FAILED  \]" "$logs/$name-$cpu-$shard.log" || true; done |
    sed "s|^|  $name at $cpu: |"
  return $failed
}

# Left out under emulation unless --full: the forward of every weight type and variant
# through whole inference blocks on every level (InferenceTypes, PackedForward, MoeForward:
# about 5 minutes of CPU a level under qemu). What they would check on Arm is checked here
# by the kernel tests of every level (each integer, f32, 16-bit and activation kernel
# against its scalar reference, bit for bit where the contract says so), by Forward and
# Determinism (every weight type's forward across thread counts) and by the golden tests
# below, which run checkpoints of the quantised types through the emulated ffn against
# PyTorch; they run in full on x86-64.
heavy='Isa/InferenceTypes.*:Isa/PackedForward.*:Isa/MoeForward.*'
if [ "$full" = 1 ]; then
  echo "== aarch64 (--full): whole inference blocks of every type and variant on every Arm level (QEMU_CPU=max)"
  unit_tests max "$heavy" "$build/tests/ffn_unit_tests"
fi

echo "== aarch64: unit tests under qemu at QEMU_CPU=max (every Arm level)"
unit_tests max "*-$heavy" "$build/tests/ffn_unit_tests"
unit_tests max '*' "$build/tests/ffn_cli_unit_tests"
# The fuzz regression inputs and the README's example, through ctest's own emulator line.
ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "regressions_fuzz|readme_example" > "$logs/ctest.log" ||
  { cat "$logs/ctest.log"; exit 1; }
tail -n 3 "$logs/ctest.log" | head -n 1

# What depends on the CPU model: detection, dispatch and every level's kernels.
cpu_dependent="Isa.*:Isa/*:Backward/*:KernelRegistry.*:Determinism.*-$heavy"
for cpu in neoverse-n1 cortex-a72; do
  echo "== aarch64: detection and every supported level's kernels under qemu at QEMU_CPU=$cpu"
  unit_tests "$cpu" "$cpu_dependent" "$build/tests/ffn_unit_tests"
done

echo "== aarch64: the golden tests that drive the ffn command, with the emulated aarch64 ffn (QEMU_CPU=max)"
wrapper=$PWD/$build/ffn-under-qemu
cat > "$wrapper" <<WRAPPER
#!/bin/sh
# The aarch64 ffn under qemu-user, for tests/golden (FFN_BIN); made by scripts/test-aarch64.sh.
QEMU_CPU=\${QEMU_CPU:-max} exec ${qemu[*]} $PWD/$build/tools/ffn/ffn "\$@"
WRAPPER
chmod +x "$wrapper"
# Without the Python module (it would be an aarch64 extension); the two tests left out spend
# their time building PyTorch modules up to d = 5120, not in ffn (as the sanitizer stage).
FFN_BIN=$wrapper FFN_PYTHONPATH="" "$python" -m pytest -q -p no:cacheprovider \
  tests/golden/test_cli.py tests/golden/test_golden.py tests/golden/test_checkpoints.py \
  -k "not the_seeds_default_hidden_sizes and not params_prints_the_seeds_numbers"
