#!/usr/bin/env bash
# Installs the Debian packages ffn.cpp needs to build and test (root, or sudo if present).
# Skips apt entirely when everything is already installed.
set -euo pipefail

packages=(
  g++ cmake make pkgconf          # toolchain
  ninja-build ccache              # scripts/test.sh: its builds in one parallel graph; the wheel's build reusing objects
  libcli11-dev                    # the ffn command's argument parsing
  nlohmann-json3-dev              # safetensors headers, --json output
  libsleef-dev                    # vectorised exp / erfc / tanh in the activations
  libgtest-dev libgmock-dev       # C++ unit tests
  libbenchmark-dev                # bench/ (FFN_BUILD_BENCH)
  libdnnl-dev                     # ffn bench --peers: the oneDNN peer (ffn-peer-onednn)
  pybind11-dev python3-dev        # the Python module (FFN_BUILD_PYTHON)
  clang libclang-rt-14-dev        # libFuzzer targets (scripts/fuzz.sh)
  libopenmpi-dev openmpi-bin     # blocks and training across processes (FFN_MPI), mpirun for its tests
  python3 python3-torch python3-numpy python3-pytest  # the golden suite against PyTorch
  python3-venv python3-pip        # build-venv/ (scripts/python-env.sh): the tests' PyPI oracles beside them
  libopenblas0-pthread            # the BLAS PyTorch (and NumPy) call: without it Debian falls back to the
                                  # single-threaded reference BLAS, and the --peers figures would be unfair
)

# --aarch64: also the cross build and its emulated tests (scripts/test-aarch64.sh): Debian's
# cross compiler, qemu-user, and the target's libraries from Debian's arm64 packages through
# multiarch.
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if [ "${1:-}" = "--aarch64" ]; then
  packages+=(
    g++-aarch64-linux-gnu qemu-user
    libsleef-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  )
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing Debian packages: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
