"""`import ffn`: the seeds' API shape, NumPy views, torch interop, and errors."""
import json
import os
import tracemalloc

import numpy as np
import pytest
import torch

import bound
import files
import opens
import seeds
from test_golden import ACTIVATION_OF


def within_bound(block_state, x, variant, gated, y, operand_rounding=0.0):
    state = {k: np.asarray(v, dtype=np.float64) for k, v in block_state.items()}
    y_exact, err = bound.forward_and_bound(state, np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1]),
                                           ACTIVATION_OF[variant], gated, operand_rounding)
    return np.all(np.abs(y.reshape(y_exact.shape).astype(np.float64) - y_exact) <= err)


def test_seeds_printout_written_against_ffn(ffn_module):
    ffn = ffn_module
    lines = [f"{name:9s} parameters {sum(p.size for p in m.parameters()):,}"
             for name, m in [("GELU MLP", ffn.GeluMLP(4096)), ("SwiGLU", ffn.SwiGLU(4096))]]
    assert lines == seeds.seeds_parameter_printout(4096)
    assert ffn.SwiGLU(4096).hidden == 11008 and ffn.GeluMLP(4096).hidden == 16384
    assert ffn.SwiGLU(4096, multiple=1024, ffn_dim_multiplier=1.3).hidden == 14336


def test_every_class_matches_its_torch_module(ffn_module):
    ffn = ffn_module
    pairs = [(ffn.SwiGLU, "swiglu"), (ffn.GeluMLP, "gelu"), (ffn.GLU, "glu"), (ffn.Bilinear, "bilinear"),
             (ffn.ReGLU, "reglu"), (ffn.GEGLU, "geglu"), (ffn.GatedGeluTanh, "gated_gelu_tanh"),
             (ffn.ReluMLP, "relu"), (ffn.GeluTanhMLP, "gelu_tanh"), (ffn.SwishMLP, "swish")]
    for cls, variant in pairs:
        torch.manual_seed(0)
        module = seeds.VARIANTS[variant][0](33, hidden=70, bias=True)
        block = cls(33, hidden=70, bias=True)
        assert [n for n, _ in block.named_parameters()] == [n for n, _ in module.named_parameters()]
        block.load_state_dict(module.state_dict())  # torch tensors accepted
        x = torch.randn(9, 33)
        y = block(x.numpy())
        assert y.dtype == np.float32 and y.shape == (9, 33)
        assert within_bound(module.state_dict(), x.numpy(), variant, seeds.VARIANTS[variant][1], y), variant


def test_parameters_are_views(ffn_module):
    block = ffn_module.SwiGLU(16, hidden=32)
    x = np.ones((2, 16), np.float32)
    y0 = block(x)
    for p in block.parameters():
        p[...] = 0.0
    assert np.all(block(x) == 0.0) and not np.all(y0 == 0.0)
    block.parameters()[0][:] = 1.0
    assert np.all(block.state_dict()["gate.weight"] == 1.0)


def test_forward_does_not_copy_float32_input(ffn_module):
    block = ffn_module.SwiGLU(256, hidden=256)
    x = np.random.default_rng(0).standard_normal((4096, 256)).astype(np.float32)  # 4 MiB
    block(x[:1])
    tracemalloc.start()
    y = block(x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Only y (4 MiB) is allocated through NumPy; a copy of x would double it.
    assert y.nbytes <= peak < 1.5 * x.nbytes
    # Other dtypes and layouts are converted, and give the same result.
    np.testing.assert_array_equal(block(x.astype(np.float64)), y)
    np.testing.assert_array_equal(block(np.asfortranarray(x)), y)
    assert block(x[0]).shape == (256,)


def test_errors(ffn_module):
    ffn = ffn_module
    block = ffn.SwiGLU(8, hidden=16)
    with pytest.raises(ffn.Error, match="8"):
        block(np.zeros((2, 9), np.float32))
    with pytest.raises(ffn.Error, match="missing"):
        block.load_state_dict({"up.weight": np.zeros((16, 8))})
    bad = {k: np.zeros((3, 3)) for k in ["gate.weight", "up.weight", "down.weight"]}
    with pytest.raises(ffn.Error, match=r"shape \(16, 8\)"):
        block.load_state_dict(bad)
    with pytest.raises(ffn.Error, match="variant"):
        ffn.Block("swigly", 8)
    with pytest.raises(ffn.Error, match="d_model = 0"):
        ffn.SwiGLU(0)
    assert issubclass(ffn.Error, ValueError)


def test_load_opens_the_checkpoint_once(ffn_module, tmp_path):
    """ffn.load opens the weights file once and config.json once (the kernel's count), with
    no separate look at whether the layer is a mixture of experts."""
    torch.manual_seed(3)
    block = seeds.SwiGLU(32, hidden=64)
    files.write_safetensors(tmp_path / "model.safetensors",
                            {f"model.layers.0.mlp.{k.split('.')[0]}_proj.weight": v for k, v in block.state_dict().items()})
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
    with opens.counted(tmp_path / "model.safetensors", tmp_path / "config.json") as count:
        m = ffn_module.load(tmp_path)
    assert isinstance(m, ffn_module.InferenceBlock)
    assert count == {tmp_path / "model.safetensors": 1, tmp_path / "config.json": 1}


def test_threads_reuse_one_pool_per_count(ffn_module):
    """Calls given threads=n run on one pool of n threads, made by the first of them and kept:
    its n − 1 workers are the same threads (/proc/self/task) at every later call, whatever
    the call (forward, backward, an inference block's forward), not a new pool each time."""
    ffn = ffn_module
    n = 13  # a count no other test asks for: its pool is made here
    block = ffn.SwiGLU(64, hidden=128)
    fast = block.for_inference("q8_0")
    x = np.random.default_rng(4).standard_normal((9, 64)).astype(np.float32)

    def threads():
        return set(os.listdir("/proc/self/task"))

    before = threads()
    y = block(x, threads=n)
    workers = threads() - before
    assert len(workers) == n - 1, f"{len(workers)} new threads after the first call with threads={n}"
    for _ in range(3):
        np.testing.assert_array_equal(block(x, threads=n), y)
        block.backward(x, x, threads=n)
        fast(x, threads=n)
    assert threads() - before == workers


def test_load_and_from_torch(ffn_module, tmp_path):
    ffn = ffn_module
    torch.manual_seed(1)
    layers = [seeds.SwiGLU(32, hidden=64) for _ in range(3)]
    files.write_safetensors(tmp_path / "model.safetensors",
                            {f"model.layers.{n}.mlp.{k.split('.')[0]}_proj.weight": v
                             for n, m in enumerate(layers) for k, v in m.state_dict().items()})
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
    block = ffn.load_trainable(tmp_path, layer=2)
    assert isinstance(block, ffn.SwiGLU) and block.hidden == 64
    x = np.random.default_rng(1).standard_normal((5, 32)).astype(np.float32)
    assert within_bound(layers[2].state_dict(), x, "swiglu", True, block(x))
    # load: for inference, in the file's types (F32 here).
    fast = ffn.load(tmp_path, layer=2)
    assert isinstance(fast, ffn.InferenceBlock) and fast.types == {"gate": "f32", "up": "f32", "down": "f32"}
    assert within_bound(layers[2].state_dict(), x, "swiglu", True, fast(x))

    # The seeds' module, and a Hugging Face-style LlamaMLP (gate_proj/up_proj/down_proj,
    # config.hidden_act), both become the same block.
    seeds_block = ffn.from_torch(layers[0])
    assert isinstance(seeds_block, ffn.SwiGLU)

    class Config:
        hidden_act = "silu"

    class LlamaMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = Config()
            self.gate_proj = torch.nn.Linear(32, 64, bias=False)
            self.up_proj = torch.nn.Linear(32, 64, bias=False)
            self.down_proj = torch.nn.Linear(64, 32, bias=False)

    hf = LlamaMLP()
    hf.load_state_dict({k.replace("gate", "gate_proj").replace("up", "up_proj").replace("down", "down_proj"): v
                        for k, v in layers[0].state_dict().items()})
    hf_block = ffn.from_torch(hf)
    assert hf_block.variant == "swiglu"
    np.testing.assert_array_equal(hf_block(x), seeds_block(x))
    with pytest.raises(ffn.Error, match="no up/down"):
        ffn.from_torch(torch.nn.Sequential(torch.nn.Linear(2, 2)))

    class Unknown(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(4, 8)
            self.down = torch.nn.Linear(8, 4)

    with pytest.raises(ffn.Error, match="pass variant="):
        ffn.from_torch(Unknown())
    assert ffn.from_torch(Unknown(), variant="relu").bias


def test_inference_block(ffn_module):
    """An f32 inference block: within the f32 bound, the same bits for a token alone or in a batch."""
    ffn = ffn_module
    block = ffn.SwiGLU(64, hidden=96, seed=3, bias=True)
    fast = block.for_inference()
    assert isinstance(fast, ffn.InferenceBlock) and fast.dtype == "f32" and "InferenceBlock" in repr(fast)
    x = np.random.default_rng(4).standard_normal((9, 64)).astype(np.float32)
    assert within_bound(block.state_dict(), x, "swiglu", True, fast(x))
    np.testing.assert_array_equal(fast(x[3]), fast(x)[3])
    # Inference only: no parameters to train, no backward.
    assert not hasattr(fast, "parameters") and not hasattr(fast, "backward")
    assert "panels" in fast.describe()
    # bf16 panels: the f32 bound on the bf16-rounded weights (biases stay float32), plus
    # the activations' rounding to bf16 where the CPU's bf16 dot product takes them so.
    fast16 = block.for_inference("bf16")
    assert fast16.dtype == "bf16"
    rounded = {k: torch.from_numpy(np.array(v)).to(torch.bfloat16).float().numpy() if k.endswith("weight") else v
               for k, v in block.state_dict().items()}
    operand_rounding = 2.0**-8 if ffn.active_isa() == "avx512_bf16" else 0.0
    assert within_bound(rounded, x, "swiglu", True, fast16(x), operand_rounding)
    # Each matrix its own type, as quantisation mixes store them.
    mix = block.for_inference(gate="q4_0", up="q4_0", down="q8_0")
    assert mix.types == {"gate": "q4_0", "up": "q4_0", "down": "q8_0"} and mix.dtype is None
    assert mix.weight_bytes == 2 * 96 * 2 * 18 + 64 * 3 * 34 + 4 * (2 * 96 + 64)


def test_stored_types(ffn_module, tmp_path):
    """Inference blocks whose weights are bf16/f16/q8_0/q4_0, read as stored."""
    ffn = ffn_module
    block = ffn.SwiGLU(64, hidden=96, seed=3)
    x = np.random.default_rng(2).standard_normal((5, 64)).astype(np.float32)
    y = block(x)
    operand_rounding = 2.0**-8 if ffn.active_isa() == "avx512_bf16" else 0.0
    for dtype, to_torch in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        stored = block.for_inference(dtype)
        assert isinstance(stored, ffn.InferenceBlock) and stored.dtype == dtype and dtype in repr(stored)
        # bf16/f16 weights are exact in f32: the f32 bound on the rounded weights holds (bf16
        # plus the activations' rounding where the CPU dots bf16).
        rounded = {k: torch.from_numpy(np.array(v)).to(to_torch).float().numpy() for k, v in block.state_dict().items()}
        assert within_bound(rounded, x, "swiglu", True, stored(x), operand_rounding if dtype == "bf16" else 0.0)
    for dtype, budget in (("q8_0", 4e-2), ("q4_0", 3e-1)):
        stored = block.for_inference(dtype)
        # Relative RMS error against f32: weights of 8 (4) bits and activations quantised
        # to 8 bits; measured 1.3e-2 (q8_0) and 1.2e-1 (q4_0) on this small block (fixed
        # seeds) — a wrong scale or nibble order gives ~1.
        err = np.sqrt(np.mean((stored(x) - y) ** 2) / np.mean(y ** 2))
        assert err < budget, (dtype, err)
    with pytest.raises(ffn.Error, match="32"):
        ffn.SwiGLU(40, hidden=96).for_inference("q4_0")

    # load(dtype=...) from a safetensors file converts; without it the file's F32 is kept.
    files.write_safetensors(tmp_path / "model.safetensors",
                            {f"{k}": torch.from_numpy(np.array(v)) for k, v in block.state_dict().items()})
    loaded = ffn.load(tmp_path / "model.safetensors", variant="swiglu", dtype="q8_0")
    assert loaded.dtype == "q8_0"
    np.testing.assert_array_equal(loaded(x), block.for_inference("q8_0")(x))
    assert ffn.load(tmp_path / "model.safetensors", variant="swiglu").dtype == "f32"


def test_isa_lists_are_the_library_s(ffn_module, run_ffn):
    """ffn.ISAS is the library's list of levels (the one ffn forward --help and ffn types name), narrowest
    first from scalar; the CPU's levels are among them and the active one among those."""
    ffn = ffn_module
    assert ffn.ISAS[0] == "scalar" and len(set(ffn.ISAS)) == len(ffn.ISAS)
    assert set(ffn.supported_isas()) <= set(ffn.ISAS) and ffn.supported_isas()[0] == "scalar"
    assert ffn.active_isa() in ffn.supported_isas()
    assert "FFN_ISA=" + "|".join(ffn.ISAS) in " ".join(run_ffn("forward", "--help").stdout.split())
    kernels = json.loads(run_ffn("types", "--json").stdout)[0]["kernels"]
    assert set(kernels) == set(ffn.supported_isas())  # a JSON object: keys in no particular order
