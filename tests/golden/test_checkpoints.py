"""Real checkpoint layouts, written here with PyTorch from the seeds' modules, run through
`ffn forward` and `ffn quantize`: every naming scheme must give what the module gives."""
import json

import numpy as np
import pytest
import torch

import files
import quant_ref
import seeds
from test_golden import check_against_module


def two_layers(cls, d=64, hidden=96, bias=False):
    """Two differently initialised blocks; tests run layer 1 so a wrong layer shows."""
    torch.manual_seed(3)
    return [cls(d, hidden=hidden, bias=bias) for _ in range(2)]


def run_layer(tmp_path, run_ffn, weights, layer, x, *extra):
    files.write_npy(tmp_path / "x.npy", x.numpy())
    run_ffn("forward", "--weights", weights, "--layer", layer, "--input", tmp_path / "x.npy",
            "--output", tmp_path / "y.npy", "--quiet", *extra)
    return np.load(tmp_path / "y.npy")


def assert_both_match(ffn_module, module, gated, variant, x, y_cli, path, layer, given_variant=None):
    """The CLI's output and `ffn.load(...)`'s output both agree with the module."""
    assert_matches(module, gated, variant, x, y_cli)
    block = ffn_module.load(path, layer=layer, variant=given_variant)
    assert block.variant == variant
    assert_matches(module, gated, variant, x, block(x.numpy()))


def assert_matches(module, gated, variant, x, y):
    import bound
    from test_golden import ACTIVATION_OF

    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    y_exact, err = bound.forward_and_bound(state, x.double().numpy(), ACTIVATION_OF[variant], gated)
    assert np.all(np.abs(y.astype(np.float64) - y_exact) <= err)


@pytest.mark.parametrize("mlp_bias", [False, True])
def test_hugging_face_names_with_config(tmp_path, run_ffn, ffn_module, mlp_bias):
    blocks = two_layers(seeds.SwiGLU, bias=mlp_bias)
    tensors = {}
    for n, m in enumerate(blocks):
        for k, v in m.state_dict().items():
            proj, kind = k.split(".")
            tensors[f"model.layers.{n}.mlp.{proj}_proj.{kind}"] = v
    tensors["model.embed_tokens.weight"] = torch.zeros(10, 64)
    files.write_safetensors(tmp_path / "model.safetensors", tensors, metadata={"format": "pt"})
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu", "mlp_bias": mlp_bias}))
    x = torch.randn(5, 64)
    y = run_layer(tmp_path, run_ffn, tmp_path, 1, x)  # the folder; no --variant: config.json says
    assert_both_match(ffn_module, blocks[1], True, "swiglu", x, y, tmp_path, 1)


def test_sharded_hugging_face_checkpoint(tmp_path, run_ffn, ffn_module):
    blocks = two_layers(seeds.SwiGLU)
    shards = [{}, {}]
    weight_map = {}
    for n, m in enumerate(blocks):
        for k, v in m.state_dict().items():
            name = f"model.layers.{n}.mlp.{k.split('.')[0]}_proj.weight"
            shard = 0 if k.startswith("gate") else 1  # split each layer across both shards
            shards[shard][name] = v
            weight_map[name] = f"model-0000{shard + 1}-of-00002.safetensors"
    for i, s in enumerate(shards):
        files.write_safetensors(tmp_path / f"model-0000{i + 1}-of-00002.safetensors", s)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
    x = torch.randn(3, 64)
    assert_matches(blocks[1], True, "swiglu", x, run_layer(tmp_path, run_ffn, tmp_path, 1, x))
    y = run_layer(tmp_path, run_ffn, tmp_path / "model.safetensors.index.json", 1, x)
    assert_both_match(ffn_module, blocks[1], True, "swiglu", x, y, tmp_path / "model.safetensors.index.json", 1)


def test_meta_consolidated_names(tmp_path, run_ffn, ffn_module):
    blocks = two_layers(seeds.SwiGLU)
    names = {"gate": "w1", "up": "w3", "down": "w2"}  # Meta: w1 = gate, w3 = up, w2 = down
    tensors = {f"layers.{n}.feed_forward.{names[k.split('.')[0]]}.weight": v
               for n, m in enumerate(blocks) for k, v in m.state_dict().items()}
    files.write_safetensors(tmp_path / "consolidated.00.safetensors", tensors)
    x = torch.randn(4, 64)
    y = run_layer(tmp_path, run_ffn, tmp_path / "consolidated.00.safetensors", 1, x, "--variant", "swiglu")
    assert_both_match(ffn_module, blocks[1], True, "swiglu", x, y, tmp_path / "consolidated.00.safetensors", 1, "swiglu")
    p = run_ffn("forward", "--weights", tmp_path / "consolidated.00.safetensors", "--input", tmp_path / "x.npy",
                "--output", tmp_path / "y.npy", check=False)
    assert p.returncode == 1 and "--variant" in p.stderr


@pytest.mark.parametrize("prefix", ["", "transformer."])
def test_gpt2_conv1d_transposed(tmp_path, run_ffn, ffn_module, prefix):
    blocks = two_layers(seeds.GeluTanhMLP, d=48, hidden=192, bias=True)
    tensors = {}
    for n, m in enumerate(blocks):
        # GPT-2's Conv1D stores weight [in, out]: the transpose of nn.Linear's.
        tensors[f"{prefix}h.{n}.mlp.c_fc.weight"] = m.up.weight.t().contiguous()
        tensors[f"{prefix}h.{n}.mlp.c_fc.bias"] = m.up.bias
        tensors[f"{prefix}h.{n}.mlp.c_proj.weight"] = m.down.weight.t().contiguous()
        tensors[f"{prefix}h.{n}.mlp.c_proj.bias"] = m.down.bias
    files.write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({"activation_function": "gelu_new", "n_embd": 48}))
    x = torch.randn(6, 48)
    y = run_layer(tmp_path, run_ffn, tmp_path / "model.safetensors", 1, x)
    assert_both_match(ffn_module, blocks[1], False, "gelu_tanh", x, y, tmp_path / "model.safetensors", 1)


def test_missing_layer_and_unknown_names(tmp_path, run_ffn):
    blocks = two_layers(seeds.SwiGLU)
    files.write_safetensors(tmp_path / "w.safetensors", {f"model.layers.{n}.mlp.{k.split('.')[0]}_proj.weight": v
                                                          for n, m in enumerate(blocks) for k, v in m.state_dict().items()})
    files.write_npy(tmp_path / "x.npy", np.zeros((1, 64)))
    p = run_ffn("forward", "--weights", tmp_path / "w.safetensors", "--layer", 5, "--variant", "swiglu",
                "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", check=False)
    assert p.returncode == 1 and "layer 5 not found" in p.stderr and "0 to 1" in p.stderr
    files.write_safetensors(tmp_path / "odd.safetensors", {"encoder.fc1.weight": torch.zeros(8, 4)})
    p = run_ffn("forward", "--weights", tmp_path / "odd.safetensors", "--variant", "swiglu",
                "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", check=False)
    assert p.returncode == 1 and "encoder.fc1.weight [8, 4]" in p.stderr


def hf_checkpoint(tmp_path, blocks):
    tensors = {f"model.layers.{n}.mlp.{k.split('.')[0]}_proj.weight": v
               for n, m in enumerate(blocks) for k, v in m.state_dict().items()}
    files.write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
    return tmp_path / "model.safetensors"


@pytest.mark.parametrize("wtype,max_rel_rms", [("f32", 0.0), ("f16", 1e-3), ("bf16", 1e-2), ("q8_0", 1e-2),
                                               ("q4_0", 0.2)])
def test_quantize_to_gguf_and_run_it(tmp_path, run_ffn, ffn_module, wtype, max_rel_rms):
    blocks = two_layers(seeds.SwiGLU)
    src = hf_checkpoint(tmp_path, blocks)
    out = tmp_path / f"mlp-{wtype}.gguf"
    report = run_ffn("quantize", src, out, "--type", wtype, "--all-layers").stdout
    assert "layer 1: error against f32" in report
    rel = [float(line.split("relative RMS ")[1].split(",")[0]) for line in report.splitlines()
           if "error against f32" in line]
    assert len(rel) == 2 and all(r <= max_rel_rms for r in rel), report

    # The GGUF holds exactly ggml's rounding of each weight (checked against a NumPy
    # restatement of ggml's reference quantisers), and runs as the same block.
    loaded = ffn_module.load_trainable(out, layer=1)
    assert loaded.variant == "swiglu"
    assert ffn_module.load(out, layer=1).dtype == wtype  # for inference: as the file stores it
    roundtrip = {"f32": lambda w: w, "f16": lambda w: w.astype(np.float16).astype(np.float32),
                 "q8_0": quant_ref.q8_0_roundtrip, "q4_0": quant_ref.q4_0_roundtrip,
                 "bf16": lambda w: (torch.from_numpy(w).to(torch.bfloat16).float().numpy())}[wtype]
    for name, p in loaded.named_parameters():
        want = roundtrip(blocks[1].state_dict()[name].numpy())
        np.testing.assert_array_equal(p, want, err_msg=name)

    # ffn forward --dtype on the GGUF equals ffn forward --dtype on the original: the same
    # weights (re-quantising ggml-quantised values changes no byte), run as stored.
    x = torch.randn(7, 64)
    y_gguf = run_layer(tmp_path, run_ffn, out, 1, x, "--dtype", wtype)
    y_dtype = run_layer(tmp_path, run_ffn, src, 1, x, "--dtype", wtype)
    np.testing.assert_array_equal(y_gguf, y_dtype)


def test_a_file_runs_in_the_types_it_stores(tmp_path, run_ffn, ffn_module):
    """ffn forward, ffn bench --weights and ffn.load run a q8_0 GGUF as q8_0 (what --dtype
    q8_0 gives, bit for bit); --dtype f32 widens it, and gives another result (f32
    activations, no quantisation)."""
    blocks = two_layers(seeds.SwiGLU)
    out = tmp_path / "mlp-q8_0.gguf"
    run_ffn("quantize", hf_checkpoint(tmp_path, blocks), out, "--type", "q8_0", "--all-layers")
    x = torch.randn(5, 64)
    y_stored = run_layer(tmp_path, run_ffn, out, 1, x)
    np.testing.assert_array_equal(y_stored, run_layer(tmp_path, run_ffn, out, 1, x, "--dtype", "q8_0"))
    y_f32 = run_layer(tmp_path, run_ffn, out, 1, x, "--dtype", "f32")
    assert not np.array_equal(y_stored, y_f32)
    np.testing.assert_array_equal(ffn_module.load(out, layer=1)(x.numpy()), y_stored)
    files.write_npy(tmp_path / "x.npy", x.numpy())
    said = run_ffn("forward", "--weights", out, "--layer", 1, "--input", tmp_path / "x.npy", "--output",
                   tmp_path / "y.npy").stdout
    assert "weights q8_0" in said
    bench = tmp_path / "bench.json"
    run_ffn("bench", "--weights", out, "--layer", 1, "--tokens", "1", "--reps", "1", "--threads", "1", "--json", bench)
    rows = json.loads(bench.read_text())["rows"]
    assert [r["dtype"] for r in rows] == ["q8_0"] and "q8_0_panel_gemm" in rows[0]["path"]


def test_quantize_rejects_rows_not_in_blocks(tmp_path, run_ffn):
    torch.manual_seed(0)
    files.write_safetensors(tmp_path / "w.safetensors", seeds.SwiGLU(40, hidden=96).state_dict())
    p = run_ffn("quantize", tmp_path / "w.safetensors", tmp_path / "o.gguf", "--type", "q4_0", "--variant", "swiglu",
                check=False)
    assert p.returncode == 1 and "d_model 40" in p.stderr and "blocks of 32 weights" in p.stderr
    assert not (tmp_path / "o.gguf").exists()
    p = run_ffn("quantize", tmp_path / "w.safetensors", tmp_path / "o.gguf", "--type", "q4_0:q4_0:q4_K", "--variant",
                "swiglu", check=False)  # d_model 40 is not a multiple of 32 either: gate and up are named first
    assert p.returncode == 1 and "gate and up's rows" in p.stderr
