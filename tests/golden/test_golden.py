"""Golden suite: each block defined by the seeds' PyTorch module code (seeds.py) is written to
safetensors, run through `ffn forward`, and compared with the module.

Tolerance: the rigorous f32 error bound of bound.py, element by element, against the module
run in float64. It holds for any correct f32 implementation (PyTorch's own f32 output is
checked against it too, which shows the bound is not tuned to ffn), and is about
2*(d+hidden)*2**-24 of each output's magnitude, so a real bug cannot hide under it.
"""
import numpy as np
import pytest
import torch

import bound
import files
import seeds

# d = 1, odd d, hidden not a multiple of 16, T = 1 and T = 257, with and without bias.
SHAPES = [
    # d, hidden, tokens, bias
    (1, 1, 1, False),
    (1, 3, 5, True),
    (7, 13, 2, False),
    (33, 171, 257, True),
    (64, 100, 1, False),
    (96, 256, 17, True),
]

ACTIVATION_OF = {
    "relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "swish": "swish", "glu": "sigmoid",
    "bilinear": "identity", "reglu": "relu", "geglu": "gelu", "swiglu": "swish", "gated_gelu_tanh": "gelu_tanh",
    # Hugging Face's (test_hf_activations.py)
    "quick_gelu": "quick_gelu", "gated_quick_gelu": "quick_gelu", "relu2": "relu2", "gated_relu2": "relu2",
    "relu6": "relu6", "gated_relu6": "relu6",
}


def make_block(variant, d, hidden, bias, seed=0):
    cls, gated = seeds.VARIANTS[variant]
    torch.manual_seed(seed)
    return cls(d, hidden=hidden, bias=bias), gated


def check_against_module(tmp_path, run_ffn, module, gated, variant, x, dtype=torch.float32, env=None, args=(),
                         operand_rounding=0.0):
    """`args`: more options for ffn forward; operand_rounding: as bound.forward_and_bound."""
    weights = tmp_path / "w.safetensors"
    files.write_safetensors(weights, {k: v.to(dtype) for k, v in module.state_dict().items()})
    files.write_npy(tmp_path / "x.npy", x.numpy())
    run_ffn("forward", "--variant", variant, "--weights", weights, "--input", tmp_path / "x.npy",
            "--output", tmp_path / "y.npy", "--quiet", *args, env=env)
    y_ffn = np.load(tmp_path / "y.npy")
    assert y_ffn.shape == tuple(x.shape) and y_ffn.dtype == np.float32

    # The module with the weights exactly as stored in the file (f16/bf16 rounding included).
    state = {k: v.to(dtype).to(torch.float64).numpy() for k, v in module.state_dict().items()}
    module.load_state_dict({k: torch.from_numpy(v).float() for k, v in state.items()})
    y_exact, err_bound = bound.forward_and_bound(state, x.double().numpy(), ACTIVATION_OF[variant], gated,
                                                 operand_rounding)
    with torch.no_grad():
        y_module64 = module.double()(x.double()).numpy()
        y_module32 = module.float()(x).numpy()
    # The NumPy restatement agrees with the module in float64 (to float64 rounding).
    np.testing.assert_allclose(y_exact, y_module64, rtol=1e-9, atol=1e-12)
    # PyTorch's own f32 result is within the bound: the bound is sound, not tuned to ffn.
    assert np.all(np.abs(y_module32 - y_module64) <= err_bound)
    ratio = np.abs(y_ffn.astype(np.float64) - y_module64) / err_bound
    worst = np.unravel_index(np.argmax(ratio), ratio.shape)
    assert ratio.max() <= 1.0, (
        f"{variant}: output {worst} = {y_ffn[worst]!r}, module says {y_module64[worst]!r}, bound {err_bound[worst]:.3g}")
    return ratio.max()


@pytest.mark.parametrize("variant", list(seeds.VARIANTS))
@pytest.mark.parametrize("d,hidden,tokens,bias", SHAPES)
def test_forward_matches_module(tmp_path, run_ffn, variant, d, hidden, tokens, bias):
    module, gated = make_block(variant, d, hidden, bias)
    torch.manual_seed(1)
    x = torch.randn(tokens, d) * 2
    check_against_module(tmp_path, run_ffn, module, gated, variant, x)


# Every level of both architectures' lists (include/ffn/isa_list.hpp); a test runs on those
# the binary finds on this CPU.
EVERY_ISA = ["scalar", "avx2", "avx2_vnni", "avx512", "avx512_vnni", "avx512_bf16", "amx_int8", "neon", "dotprod", "i8mm", "bf16"]


@pytest.mark.parametrize("isa", EVERY_ISA)
def test_every_isa_matches_module(tmp_path, run_ffn, ffn_kernels, isa):
    if isa not in ffn_kernels["f32"]:
        pytest.skip(f"this CPU (or this build's architecture) lacks {isa}")
    for variant in ["swiglu", "gelu", "geglu"]:
        module, gated = make_block(variant, 33, 171, True)
        x = torch.randn(19, 33)
        check_against_module(tmp_path, run_ffn, module, gated, variant, x, env={"FFN_ISA": isa})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_files(tmp_path, run_ffn, ffn_kernels, dtype):
    """F16 and BF16 weights run as the file stores them (the default), matching the module
    whose weights were rounded the same way: f16 (and bf16 without a bf16 dot product)
    widened exactly, the f32 bound; bf16 where the CPU has a bf16 dot product (avx512_bf16,
    the default on AMD's cores but not on Intel's, which widen; Arm's bf16) within the bound
    with the activations' rounding, which the widened values meet too. --dtype f32 widens
    them, the f32 bound everywhere."""
    module, gated = make_block("swiglu", 40, 72, True)
    x = torch.randn(9, 40)
    check_against_module(tmp_path, run_ffn, module, gated, "swiglu", x, dtype=dtype, args=("--dtype", "f32"))
    bf16_dot = dtype == torch.bfloat16 and any(k["activations"] == "bf16" for k in ffn_kernels["bf16"].values())
    module, gated = make_block("swiglu", 40, 72, True)
    check_against_module(tmp_path, run_ffn, module, gated, "swiglu", x, dtype=dtype,
                         operand_rounding=2.0**-8 if bf16_dot else 0.0)


@pytest.mark.parametrize("isa,operand_rounding",
                         [("avx512", 0.0), ("avx512_bf16", 2.0**-8), ("i8mm", 0.0), ("bf16", 2.0**-8)])
def test_bf16_weights_read_as_stored(tmp_path, run_ffn, ffn_kernels, isa, operand_rounding):
    """--dtype bf16 runs the packed bf16 panels: on avx512 and i8mm widened exactly (the f32
    bound); on avx512_bf16 and Arm's bf16 dotted with bf16 activations (the bound with their
    rounding, 2**-8 of each term — a forward that rounded more, or read a pair's other half,
    lands outside)."""
    if isa not in ffn_kernels["bf16"]:
        pytest.skip(f"this CPU (or this build's architecture) lacks {isa}")
    assert (ffn_kernels["bf16"][isa]["activations"] == "bf16") == (operand_rounding > 0), ffn_kernels["bf16"][isa]
    for variant, d, hidden in [("swiglu", 40, 72), ("gelu", 33, 171)]:
        module, gated = make_block(variant, d, hidden, True)
        x = torch.randn(13, d)
        check_against_module(tmp_path, run_ffn, module, gated, variant, x, dtype=torch.bfloat16, env={"FFN_ISA": isa},
                             args=("--dtype", "bf16"), operand_rounding=operand_rounding)


def test_the_seeds_default_hidden_sizes(run_ffn):
    import json

    for d in [1, 7, 64, 100, 384, 1000, 4096, 5120]:
        gated_hidden = seeds.SwiGLU(d).down.in_features
        info = json.loads(run_ffn("info", "--variant", "swiglu", "--d", d, "--json").stdout)
        assert info["hidden"] == gated_hidden, d
        assert info["parameters"] == sum(p.numel() for p in seeds.SwiGLU(d).parameters())
        gelu_hidden = seeds.GeluMLP(d).down.in_features
        info = json.loads(run_ffn("info", "--variant", "gelu", "--d", d, "--json").stdout)
        assert info["hidden"] == gelu_hidden, d


def test_params_prints_the_seeds_numbers(run_ffn):
    """`ffn params` begins with the seeds' printout, line for line."""
    expected = seeds.seeds_parameter_printout(4096)
    assert expected == ["GELU MLP  parameters 134,217,728", "SwiGLU    parameters 135,266,304"]
    out = run_ffn("params").stdout.splitlines()
    assert out[:2] == expected
