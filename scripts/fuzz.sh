#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for $1 seconds (default 60)
# from seed corpora made here: valid files of every dtype and naming scheme, and broken ones.
# Any crash, leak or sanitizer report fails the script; the crashing input is left in
# build-fuzz/findings/ for a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
scripts/install-deps.sh
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFFN_FUZZ=ON -DFFN_BUILD_TESTS=OFF -DFFN_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_safetensors fuzz_gguf fuzz_npy ffn_cli
/usr/bin/python3 fuzz/make_seeds.py build-fuzz/corpus build-fuzz/tools/ffn/ffn
mkdir -p build-fuzz/findings
for target in fuzz_safetensors fuzz_gguf fuzz_npy; do
  echo "== $target for ${seconds}s"
  mkdir -p "build-fuzz/corpus/$target.work"
  log=build-fuzz/$target.log
  if ! build-fuzz/fuzz/$target -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
      -artifact_prefix=build-fuzz/findings/$target- -print_final_stats=1 \
      "build-fuzz/corpus/$target.work" "build-fuzz/corpus/$target" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "$target: failed; findings in build-fuzz/findings/" >&2
    exit 1
  fi
  grep -E "stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "$log"
done
echo "fuzzing: no findings"
