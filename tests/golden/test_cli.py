"""The ffn command: help, presets, JSON, and errors that name the problem."""
import json

import numpy as np
import pytest

import files
import seeds
import torch

PUBLISHED = {
    "llama2-7b": (4096, 11008), "llama2-13b": (5120, 13824), "llama2-70b": (8192, 28672),
    "llama3-8b": (4096, 14336), "llama3-70b": (8192, 28672), "mistral-7b": (4096, 14336),
    "qwen2-7b": (3584, 18944), "palm-540b": (18432, 73728), "t5-v1.1-base": (768, 2048), "gpt2": (768, 3072),
}
LLAMA_RULE = {"llama2-7b": (256, None), "llama2-13b": (256, None), "llama2-70b": (4096, 1.3),
              "llama3-8b": (1024, 1.3), "llama3-70b": (4096, 1.3)}


def llama_reference_hidden(dim, multiple_of, ffn_dim_multiplier):
    """Meta's llama/model.py FeedForward.__init__, line for line."""
    hidden_dim = 4 * dim
    hidden_dim = int(2 * hidden_dim / 3)
    if ffn_dim_multiplier is not None:
        hidden_dim = int(ffn_dim_multiplier * hidden_dim)
    hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
    return hidden_dim


@pytest.mark.parametrize("preset", list(PUBLISHED))
def test_presets_match_published_sizes(run_ffn, preset):
    info = json.loads(run_ffn("info", "--preset", preset, "--json").stdout)
    assert (info["d_model"], info["hidden"]) == PUBLISHED[preset]
    if preset in LLAMA_RULE:
        multiple_of, mult = LLAMA_RULE[preset]
        assert llama_reference_hidden(info["d_model"], multiple_of, mult) == info["hidden"]
        assert info["preset"]["rule"]["matches_published"]
        assert info["preset"]["rule"]["multiple_of"] == multiple_of
    share = info["transformer_block"]["mlp_share"]
    assert 0.5 < share < 0.95


def test_info_text_for_llama3_8b(run_ffn):
    out = run_ffn("info", "--preset", "llama3-8b").stdout
    assert "hidden 14336" in out
    assert "multiple_of 1024, ffn_dim_multiplier 1.30 → 14336 (matches the published size)" in out
    assert "176,160,768" in out


def test_info_counts_and_bytes(run_ffn):
    info = json.loads(run_ffn("info", "--variant", "swiglu", "--d", 4096, "--json").stdout)
    assert info["parameters"] == 135266304
    assert info["matmul_flops_per_token"] == {"forward": 2 * 135266304, "forward_backward": 6 * 135266304}
    # Every weight type of `ffn types`, each 135266304 weights in ggml's blocks (gguf-py's geometry).
    import gguf
    names = [t["name"] for t in json.loads(run_ffn("types", "--json").stdout)]
    want = {}
    for name in names:
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]]
        want[name] = 135266304 // block * size
    assert info["weight_bytes"] == want
    assert info["weight_bytes"]["q4_0"] == 135266304 // 32 * 18 and info["weight_bytes"]["q6_K"] == 135266304 // 256 * 210
    assert info["decode_bytes_per_token"]["f32"] == 4 * 135266304 + 8 * 4096
    odd = json.loads(run_ffn("info", "--variant", "gelu", "--d", 100, "--json").stdout)
    assert odd["weight_bytes"]["q4_0"] is None and odd["hidden"] == 400
    assert odd["weight_bytes"]["q4_K"] is None


@pytest.mark.parametrize("sub", ["params", "info", "forward", "quantize", "demo"])
def test_help(run_ffn, sub):
    out = run_ffn(sub, "--help").stdout
    assert "--" in out and "Usage" in out or "Options" in out


def test_no_subcommand_is_an_error(run_ffn):
    p = run_ffn(check=False)
    assert p.returncode != 0


@pytest.mark.parametrize("args,message", [
    (["info", "--variant", "swigly", "--d", "64"], "variant = 'swigly' is unknown"),
    (["info", "--d", "0"], "d_model = 0"),
    (["info", "--d", "-4"], "d_model = -4"),
    (["info", "--d", "64", "--multiple-of", "0"], "multiple_of = 0"),
    (["info", "--d", "64", "--ffn-dim-multiplier", "-1"], "ffn_dim_multiplier = -1"),
    (["info", "--d", "3037000500", "--hidden", "3037000500"], "overflow"),
    (["info", "--preset", "llama9"], "preset = 'llama9' is unknown"),
])
def test_bad_arguments_name_the_problem(run_ffn, args, message):
    p = run_ffn(*args, check=False)
    assert p.returncode == 1
    assert message in p.stderr


def test_preset_excludes_shape_options(run_ffn):
    p = run_ffn("info", "--preset", "gpt2", "--d", "64", check=False)
    assert p.returncode != 0 and "excludes" in p.stderr


@pytest.fixture
def small_block(tmp_path):
    torch.manual_seed(0)
    m = seeds.SwiGLU(16, hidden=24)
    files.write_safetensors(tmp_path / "w.safetensors", m.state_dict())
    return m, tmp_path


def test_forward_errors(run_ffn, small_block):
    _, tmp = small_block
    files.write_npy(tmp / "x_bad.npy", np.zeros((3, 17)))
    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x_bad.npy",
                "--output", tmp / "y.npy", check=False)
    assert p.returncode == 1 and "17 features" in p.stderr and "d_model 16" in p.stderr
    assert not (tmp / "y.npy").exists()

    files.write_npy(tmp / "x.npy", np.zeros((3, 16)))
    p = run_ffn("forward", "--variant", "gelu", "--weights", tmp / "w.safetensors", "--input", tmp / "x.npy",
                "--output", tmp / "y.npy", check=False)
    assert p.returncode == 1 and "gate projection" in p.stderr and "variant gelu" in p.stderr

    np.save(tmp / "x64.npy", np.zeros((3, 16)))  # float64
    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x64.npy",
                "--output", tmp / "y.npy", check=False)
    assert p.returncode == 1 and "'<f8'" in p.stderr

    (tmp / "trunc.safetensors").write_bytes((tmp / "w.safetensors").read_bytes()[:-5])
    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "trunc.safetensors", "--input", tmp / "x.npy",
                "--output", tmp / "y.npy", check=False)
    assert p.returncode == 1 and "data bytes" in p.stderr

    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "missing.safetensors", "--input", tmp / "x.npy",
                "--output", tmp / "y.npy", check=False)
    assert p.returncode != 0 and "missing.safetensors" in p.stderr

    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x.npy",
                "--output", tmp / "y.npy", env={"FFN_ISA": "sse9"}, check=False)
    assert p.returncode == 1 and "ISA 'sse9' is unknown" in p.stderr

    p = run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x.npy",
                "--output", tmp / "y.npy", env={"FFN_CPU_VENDOR": "via"}, check=False)
    assert p.returncode == 1 and "FFN_CPU_VENDOR=via: expected intel or amd" in p.stderr


def test_forward_single_token_vector(run_ffn, small_block):
    m, tmp = small_block
    x = torch.randn(16)
    files.write_npy(tmp / "x.npy", x.numpy())
    run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x.npy",
            "--output", tmp / "y.npy", "--threads", 1)
    y = np.load(tmp / "y.npy")
    assert y.shape == (16,)
    with torch.no_grad():
        np.testing.assert_allclose(y, m.double()(x.double()).numpy(), rtol=0, atol=1e-5)


def test_forward_overwrites_output_atomically(run_ffn, small_block):
    _, tmp = small_block
    files.write_npy(tmp / "x.npy", np.ones((2, 16)))
    (tmp / "y.npy").write_bytes(b"old")
    run_ffn("forward", "--variant", "swiglu", "--weights", tmp / "w.safetensors", "--input", tmp / "x.npy",
            "--output", tmp / "y.npy")
    assert np.load(tmp / "y.npy").shape == (2, 16)
    assert [p.name for p in tmp.iterdir() if ".tmp." in p.name] == []


def test_demo_small(run_ffn):
    """The main job's code path, at a width that runs in a second."""
    out = run_ffn("demo", "--d", 64, "--reps", 1).stdout
    assert "GELU MLP  parameters 32,768" in out
    assert out.count(" ok") == 4 and "FAIL" not in out
    # Each row names the roof that bounds it (which one, at d = 64, depends on a memory roof
    # read from 64 KB of weights in cache: not asserted).
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("GELU MLP ", "SwiGLU ")) and line.split()[-1] == "ok"]
    assert len(rows) == 4 and all(r[-3] in ("memory", "compute") for r in rows)


# The ISA levels whose bf16 kernel dots activations rounded to bf16 (x86's vdpbf16ps, Arm's BFDOT).
BF16_DOT_LEVELS = ("avx512_bf16", "bf16")


def test_types_lists_the_weight_type_table(run_ffn):
    """`ffn types --json`: every type with ggml's GGUF number and block geometry (the
    numbers of ggml's type traits), and a kernel with its activation format on every ISA."""
    table = json.loads(run_ffn("types", "--json").stdout)
    got = {t["name"]: (t["gguf_type"], t["block_elements"], t["block_bytes"]) for t in table}
    assert list(got) == ["f32", "bf16", "f16", "q8_0", "q4_0", "q6_K", "q5_K", "q4_K", "q3_K", "q2_K", "q5_1", "q5_0",
                         "q4_1", "iq4_nl", "iq4_xs", "mxfp4", "tq1_0", "tq2_0"]
    import gguf  # llama.cpp's own numbers and geometry (gguf-py)
    for name, (number, elements, size) in got.items():
        q = gguf.GGMLQuantizationType[name.upper()]
        assert (number, elements, size) == (int(q), *gguf.GGML_QUANT_SIZES[q]), name
    for t in table:
        assert t["bits_per_weight"] == 8 * t["block_bytes"] / t["block_elements"]
        assert "scalar" in t["kernels"]
        for isa, k in t["kernels"].items():
            assert k["kernel"].endswith("_scalar") == (isa == "scalar"), (t["name"], isa, k)
            # q8_K for the types of 256-value blocks, q8_0 (ggml's q8_0 codes and scale, with sums)
            # for those of 32.
            want = ("q8_K" if t["block_elements"] == 256
                    else "q8_0" if t["block_elements"] == 32
                    else "bf16" if t["name"] == "bf16" and isa in BF16_DOT_LEVELS else "f32")
            assert k["activations"] == want, (t["name"], isa, k)
    text = run_ffn("types").stdout
    assert "q4_0" in text and "4.50" in text and "forward kernels" in text
