#!/usr/bin/env bash
# The main job: install what is needed, build, and run `ffn demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DFFN_BUILD_TESTS=OFF > /dev/null
exec build/tools/ffn/ffn demo "$@"
