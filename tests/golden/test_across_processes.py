"""The ffn command under mpirun. FFN_MPIRUN (set by CTest when ffn is built with MPI) is the
launcher with its options; without it these tests report themselves skipped.

- `ffn forward` split across 2 and 3 processes (H = 100: 34/33/33 hidden units) must give
  what the seeds' module gives within the same rigorous f32 bound as one process: a split
  sum stays within it (tests/unit/tensor_parallel_checks.hpp says why).
- `ffn forward` on a mixture-of-experts layer across 2 and 3 processes splits by experts
  (expert parallelism: 8 or 16 experts, 4+4, 3+3+2, 6+5+5) and must give one process's
  output bit for bit: each token's experts and sum are the same chain of f32 operations
  wherever they run (include/ffn/expert_parallel.hpp). More processes than experts is an
  error naming both.
- `ffn compare` data-parallel over 2 processes must reach one process's losses: the runs
  differ only by the rounding of the gradient sums (~1e-7 relative); SwiGLU is smooth, so
  over 40 steps that stays below 1e-5 nats, the tolerance (a lost or doubled share of the
  batch moves the loss by 1e-2 or more within a few steps)."""
import csv
import json
import os
import shlex
import subprocess

import numpy as np
import pytest
import torch

import files
import moe_reference as mr
import seeds
from test_checkpoints import assert_matches
from test_compare import text

MPIRUN = shlex.split(os.environ.get("FFN_MPIRUN", ""))
pytestmark = pytest.mark.skipif(not MPIRUN, reason="ffn built without MPI (FFN_MPIRUN not set)")


def mpirun(ffn_bin, ranks, *args):
    p = subprocess.run([*MPIRUN, "-np", str(ranks), ffn_bin, *map(str, args)], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, f"mpirun -np {ranks} ffn {' '.join(map(str, args))}:\n{p.stdout}\n{p.stderr}"
    return p


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("cls,variant,gated,d,hidden", [(seeds.SwiGLU, "swiglu", True, 48, 100),
                                                        (seeds.GeluMLP, "gelu", False, 32, 37)])
def test_forward_split_across_processes(tmp_path, ffn_bin, ranks, cls, variant, gated, d, hidden):
    torch.manual_seed(5)
    module = cls(d, hidden=hidden, bias=True)
    files.write_safetensors(tmp_path / "w.safetensors", {k: v.detach() for k, v in module.state_dict().items()})
    x = torch.randn(9, d)
    files.write_npy(tmp_path / "x.npy", x.numpy())
    out = mpirun(ffn_bin, ranks, "forward", "--weights", tmp_path / "w.safetensors", "--variant", variant,
                 "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy").stdout
    assert f"split over {ranks} processes" in out
    assert out.count("→") == 1  # rank 0 alone prints
    assert_matches(module, gated, variant, x, np.load(tmp_path / "y.npy"))


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("dtype", ["q8_0", "q4_0", "bf16"])
def test_forward_dtype_means_the_same_across_processes(tmp_path, ffn_bin, run_ffn, ranks, dtype):
    """`mpirun ffn forward --dtype T` runs what one process runs: each rank's slice in T,
    activations quantised (or rounded) as one process does, so the split changes only the
    f32 summation of the down projection (relative RMS ~1e-7). Rounding the weights to T
    and running them unquantised, as an f32 block, differs by ~1e-2 for q8_0 / q4_0."""
    torch.manual_seed(6)
    module = seeds.SwiGLU(64, hidden=128, bias=True)
    files.write_safetensors(tmp_path / "w.safetensors", {k: v.detach() for k, v in module.state_dict().items()})
    files.write_npy(tmp_path / "x.npy", torch.randn(9, 64).numpy())
    common = ["forward", "--weights", tmp_path / "w.safetensors", "--variant", "swiglu", "--input", tmp_path / "x.npy",
              "--dtype", dtype]
    run_ffn(*common, "--output", tmp_path / "one.npy")
    out = mpirun(ffn_bin, ranks, *common, "--output", tmp_path / "split.npy").stdout
    assert f"split over {ranks} processes" in out
    one, split = np.load(tmp_path / "one.npy"), np.load(tmp_path / "split.npy")
    rel = np.sqrt(np.mean((split - one) ** 2) / np.mean(one ** 2))
    assert rel < 1e-5, rel


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("family,fused,dtype", [("mixtral", False, None), ("qwen2_moe", True, None),
                                                ("mixtral", False, "q8_0")])
def test_moe_forward_split_by_experts_gives_one_process_bits(tmp_path, ffn_bin, run_ffn, ranks, family, fused,
                                                            dtype):
    """Mixtral (8 experts, top 2) and Qwen2-MoE (16 experts, top 4, a shared expert with its
    sigmoid gate, the fused 3-D expert tensors); f32 and q8_0 experts. 10 tokens: over 3
    processes 4, 3, 3 tokens each."""
    spec = mr.SPECS[family]
    layers = mr.random_model(spec, 21)
    path = mr.write_hf(tmp_path / "m", spec, layers, fused=fused)
    files.write_npy(tmp_path / "x.npy", mr.draw_inputs(spec, layers[1], np.random.default_rng(22), 10))
    common = ["forward", "--weights", path, "--layer", 1, "--input", tmp_path / "x.npy", "--threads", 1]
    if dtype:
        common += ["--dtype", dtype]
    run_ffn(*common, "--output", tmp_path / "one.npy")
    out = mpirun(ffn_bin, ranks, *common, "--output", tmp_path / "split.npy").stdout
    assert f"split over {ranks} processes by experts" in out and out.count("→") == 1
    E = spec.experts
    first = [E // ranks + (r < E % ranks) for r in range(ranks)]
    starts = np.cumsum([0] + first)
    assert "experts " + ", ".join(f"{a}…{b - 1}" for a, b in zip(starts[:-1], starts[1:])) in out
    one, split = np.load(tmp_path / "one.npy"), np.load(tmp_path / "split.npy")
    assert one.shape == split.shape == (10, spec.d)
    assert one.tobytes() == split.tobytes(), np.abs(one - split).max()


def test_moe_forward_with_more_processes_than_experts_is_refused(tmp_path, ffn_bin):
    spec = mr.dataclasses.replace(mr.SPECS["mixtral"], experts=2, k=1)
    layers = mr.random_model(spec, 23)
    path = mr.write_hf(tmp_path / "m", spec, layers)
    files.write_npy(tmp_path / "x.npy", np.zeros((3, spec.d), np.float32))
    args = ["forward", "--weights", path, "--layer", 1, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy"]
    p = subprocess.run([*MPIRUN, "-np", "3", ffn_bin, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert p.returncode != 0
    assert "cannot split 2 experts over 3 processes" in p.stderr and "at most 2" in p.stderr, p.stderr
    assert not (tmp_path / "y.npy").exists()


def test_compare_data_parallel_matches_one_process(tmp_path, ffn_bin, run_ffn):
    data = text(tmp_path / "text.txt")
    args = ["compare", "--data", data, "--variants", "swiglu", "--d", 16, "--layers", 1, "--steps", 40, "--batch", 25,
            "--seeds", 1, "--eval-tokens", 512, "--eval-every", 10, "--threads", 1]
    run_ffn(*args, "--csv", tmp_path / "one.csv")
    out = mpirun(ffn_bin, 2, *args, "--csv", tmp_path / "two.csv").stdout
    assert "every batch split across 2 processes" in out
    one = list(csv.DictReader((tmp_path / "one.csv").open()))
    two = list(csv.DictReader((tmp_path / "two.csv").open()))
    assert [r["step"] for r in one] == [r["step"] for r in two] and len(one) == 4
    for a, b in zip(one, two):
        for key in ("train_loss", "valid_loss"):
            assert abs(float(a[key]) - float(b[key])) <= 1e-5, (key, a, b)


def test_bench_split_across_processes(tmp_path, ffn_bin):
    """`ffn bench --tp`: process 0 alone prints the table and writes the JSON — a row per
    token count, the split's time made of its slice and its all-reduce, and the machine."""
    out = tmp_path / "tp.json"
    p = mpirun(ffn_bin, 2, "bench", "--tp", "--d", 64, "--hidden", 96, "--tokens", "1,3", "--reps", 2, "--threads", 1,
               "--json", out)
    assert p.stdout.count("ffn bench --tp") == 1 and "split over 2 processes" in p.stdout
    result = json.loads(out.read_text())
    assert result["processes"] == 2 and result["d"] == 64 and result["hidden"] == 96
    assert result["machine"]["family"] > 0
    assert [r["tokens"] for r in result["rows"]] == [1, 3]
    for r in result["rows"]:
        assert r["ms"] > 0 and r["slice_ms"] > 0 and r["allreduce_ms"] >= 0 and r["one_process_ms"] > 0
        assert 0 <= r["allreduce_share"] <= 1
        assert r["bytes_per_token_per_process"] == 4 * 64
    assert sorted(f.name for f in tmp_path.iterdir()) == ["tp.json"]  # no temporary left
