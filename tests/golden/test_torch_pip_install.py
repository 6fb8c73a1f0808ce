"""`pip install .` into a fresh virtual environment gives a working ffn: the module imports (at
the project's version), `python -m ffn params` and the `ffn` script run the installed command,
and ffn.torch imports beside Debian's torch.

It builds the whole library (about as long as the main build on 2 cores the first time), so
the golden suite skips it unless FFN_TEST_PIP_INSTALL=1; scripts/test.sh runs it as a step of
its own. FFN_PIP_BUILD_DIR keeps scikit-build-core's CMake build between runs (incremental);
the build backend comes from PyPI through pip's build isolation (pyproject.toml's
build-system.requires), as for any user, unless FFN_PIP_NO_ISOLATION=1 (then from the venv
that runs this test, tests/requirements.txt pins it).
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.environ.get("FFN_TEST_PIP_INSTALL") != "1",
                                reason="builds the wheel: set FFN_TEST_PIP_INSTALL=1 (scripts/test.sh does)")


def run(*args, **kw):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1800, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, args))} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p.stdout


def test_pip_install_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    run("/usr/bin/python3", "-m", "venv", "--system-site-packages", venv)
    python = venv / "bin" / "python"
    args = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ROOT]
    if os.environ.get("FFN_PIP_BUILD_DIR"):
        args += ["--config-settings", f"build-dir={os.environ['FFN_PIP_BUILD_DIR']}"]
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env.pop("PYTHONPATH", None)
    if os.environ.get("FFN_PIP_NO_ISOLATION") == "1":
        # The backend from the environment running this test (build-venv/), seen through a .pth file.
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        ours = subprocess.run([sys.executable, "-c", "import scikit_build_core, os; "
                               "print(os.path.dirname(os.path.dirname(scikit_build_core.__file__)))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        pathlib.Path(site, "ffn-test-backend.pth").write_text(ours + "\n")
        args.append("--no-build-isolation")
    run(*args, env=env, cwd=tmp_path)

    # Imported from the venv (not the source tree or build/python), at the project's version.
    where = run(python, "-c", "import ffn, importlib.metadata as m; print(ffn.__file__); print(ffn.__version__); "
                "print(m.version('ffn'))", cwd=tmp_path, env=env)
    path, version, dist_version = where.split()
    assert path.startswith(str(venv)), path
    cmake_version = re.search(r"project\(ffn\s+VERSION\s+([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert version == dist_version == cmake_version
    out = run(python, "-m", "ffn", "params", cwd=tmp_path, env=env)
    assert "SwiGLU    parameters 135,266,304" in out
    assert "parameters" in run(venv / "bin" / "ffn", "params", "--d", "64", cwd=tmp_path, env=env)
    run(python, "-c", "import torch, ffn.torch; m = ffn.torch.SwiGLU(32); print(m(torch.randn(2, 32)).shape)",
        cwd=tmp_path, env=env)
