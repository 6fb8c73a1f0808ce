#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for $1 seconds (default 60)
# from seed corpora made here (valid files of every dtype and naming scheme, valid command
# lines of every subcommand, and broken ones) plus the saved regression inputs under
# tests/regressions/<target>/. Any crash, leak, hang or sanitizer report fails the script;
# the crashing input is left in build-fuzz/findings/ — add it to tests/regressions/<target>/.
# $2, if given, is a comma-separated list of targets (default: all five).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-60}
targets=${2:-fuzz_safetensors,fuzz_gguf,fuzz_npy,fuzz_index,fuzz_cli}
scripts/install-deps.sh
# The same build-fuzz/ as scripts/test.sh's sanitizer stage, which also builds the unit tests
# there: a folder configured before keeps its FFN_BUILD_TESTS, a new one builds no tests.
tests=()
[ -f build-fuzz/CMakeCache.txt ] || tests=(-DFFN_BUILD_TESTS=OFF)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFFN_FUZZ=ON "${tests[@]}" -DFFN_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target ${targets//,/ } ffn_cli
/usr/bin/python3 fuzz/make_seeds.py build-fuzz/corpus build-fuzz/tools/ffn/ffn
mkdir -p build-fuzz/findings
for target in ${targets//,/ }; do
  echo "== $target for ${seconds}s"
  mkdir -p "build-fuzz/corpus/$target.work"
  log=build-fuzz/$target.log
  extra=()
  # The CLI target prints usage and errors for every input: its own output is dropped
  # (libFuzzer and sanitizer reports still reach the log). It also changes the working
  # folder, hence the absolute paths.
  [ "$target" = fuzz_cli ] && extra=(-close_fd_mask=3)
  if ! build-fuzz/fuzz/$target -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 "${extra[@]}" \
      -artifact_prefix="$root/build-fuzz/findings/$target-" -print_final_stats=1 \
      "$root/build-fuzz/corpus/$target.work" "$root/build-fuzz/corpus/$target" \
      "$root/tests/regressions/$target" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "$target: failed; findings in build-fuzz/findings/" >&2
    exit 1
  fi
  grep -E "stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "$log"
done
echo "fuzzing: no findings"
