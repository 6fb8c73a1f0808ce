import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ffn_bin():
    path = os.environ.get("FFN_BIN", str(ROOT / "build" / "tools" / "ffn" / "ffn"))
    if not os.path.exists(path):
        pytest.fail(f"ffn binary not found at {path}; build first or set FFN_BIN")
    return path


@pytest.fixture(scope="session")
def run_ffn(ffn_bin):
    def run(*args, env=None, check=True):
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.run([ffn_bin, *map(str, args)], capture_output=True, text=True, env=full_env, timeout=600)
        if check and p.returncode != 0:
            raise AssertionError(f"ffn {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def ffn_kernels(run_ffn):
    """`ffn types --json` as {type: {isa: {kernel, arithmetic, activations}}}, for the ISA levels
    this CPU supports, as the binary itself detects them (so also under qemu, where
    /proc/cpuinfo is the host's)."""
    return {t["name"]: t["kernels"] for t in json.loads(run_ffn("types", "--json").stdout)}


@pytest.fixture(scope="session")
def ffn_module():
    """The Python module built by CMake (FFN_BUILD_PYTHON) into build/python."""
    import sys

    path = os.environ.get("FFN_PYTHONPATH", str(ROOT / "build" / "python"))
    if not path:
        pytest.skip("the Python module was not built (FFN_BUILD_PYTHON=OFF)")
    if path not in sys.path:
        sys.path.insert(0, path)
    import ffn

    return ffn
