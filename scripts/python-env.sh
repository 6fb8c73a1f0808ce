#!/usr/bin/env bash
# The tests' Python: a virtual environment build-venv/ over Debian's Python 3 that sees its
# packages (python3-torch, numpy, pytest: scripts/install-deps.sh) and adds, from PyPI, what
# tests/requirements.txt pins (the independent oracles, such as llama.cpp's own `gguf`
# package). Made once, brought up to date when the requirements change; prints the path of
# its python, which the test command hands to CMake (FFN_TEST_PYTHON) and to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$PWD/build-venv
requirements=tests/requirements.txt
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
fi
stamp=$venv/.requirements
if ! cmp -s "$requirements" "$stamp"; then
  echo "Installing the tests' Python packages into $venv: $(grep -v '^#' "$requirements" | tr '\n' ' ')" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$stamp"
fi
echo "$venv/bin/python"
