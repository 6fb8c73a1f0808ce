"""Gemma 3n's MLP: a two-layer checkpoint as save_pretrained writes Gemma3nForConditionalGeneration
(config.json with text_config, activation_sparsity_pattern [0.95, 0.0]; safetensors under
model.language_model.layers.N.mlp.*) and its GGUF twin as llama.cpp's converter writes it,
against transformers' Gemma3nTextMLP (models/gemma3n/modeling_gemma3n.py) restated in torch.

Layer 0's gate goes through the Gaussian top-k (cutoff mean + std·Φ⁻¹(0.95), biased std), layer
1's does not. Tolerance: the rigorous f32 bound of bound.forward_and_bound with gate_sparsity
(src/block/reference.cpp derives it; the cutoff's error is one of its terms). The restated
module takes Φ⁻¹(0.95) in f32 as transformers does (Normal(0, 1).icdf of an f32 tensor), which
differs from the double quantile by ~3e-7 — inside the bound's allowance for it, so the module
and the decomposition must agree to a quarter of the bound. The wrong twin (the same weights
without the top-k) misses the module by more than a hundred times the bound."""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import bound
import files

D, H = 64, 256
PATTERN = [0.95, 0.0]
NAMES = tuple("model.language_model.layers.{N}.mlp." + m + "_proj.weight" for m in ("gate", "up", "down"))


# ---- transformers' Gemma3nTextMLP (modeling_gemma3n.py), restated --------------------------------
class Gemma3nTextMLP(torch.nn.Module):
    """forward: down_proj(act_fn(_gaussian_topk(gate_proj(x)) if activation_sparsity > 0 else
    gate_proj(x)) * up_proj(x)); act_fn = ACT2FN['gelu_pytorch_tanh'] (the tanh GELU); no biases."""

    def __init__(self, gate, up, down, activation_sparsity):
        super().__init__()
        self.gate, self.up, self.down = gate, up, down
        self.activation_sparsity = activation_sparsity

    def _gaussian_topk(self, inputs):
        target_sparsity_tensor = torch.tensor(self.activation_sparsity, dtype=torch.float32)
        normal_dist = torch.distributions.normal.Normal(0, 1)
        std_multiplier = normal_dist.icdf(target_sparsity_tensor).type(inputs.dtype)
        inputs_mean = torch.mean(inputs, dim=-1, keepdim=True)
        inputs_std = torch.std(inputs, dim=-1, keepdim=True, unbiased=False)
        cutoff_x = inputs_mean + inputs_std * std_multiplier
        return F.relu(inputs - cutoff_x)

    def forward(self, x):
        gate_proj = F.linear(x, self.gate)
        if self.activation_sparsity > 0.0:
            gate_proj = self._gaussian_topk(gate_proj)
        activations = F.gelu(gate_proj, approximate="tanh")
        return F.linear(activations * F.linear(x, self.up), self.down)


def layer_weights(seed):
    """gate/up/down (torch f32) scaled so that the gate's values are O(1)."""
    g = torch.Generator().manual_seed(seed)
    return {"gate.weight": torch.randn(H, D, generator=g) / math.sqrt(D),
            "up.weight": torch.randn(H, D, generator=g) / math.sqrt(D),
            "down.weight": torch.randn(D, H, generator=g) / math.sqrt(H)}


def module_output(w, sparsity, x, dtype=torch.float64):
    m = Gemma3nTextMLP(*(w[k + ".weight"].to(dtype) for k in ("gate", "up", "down")), sparsity)
    with torch.no_grad():
        return m(x.to(dtype)).double().numpy()


def exact_and_bound(w, x, sparsity, x_up=None):
    state = {k: v.double().numpy() for k, v in w.items()}
    x_up = None if x_up is None else x_up.double().numpy()
    return bound.forward_and_bound(state, x.double().numpy(), "gelu_tanh", True, gate_sparsity=sparsity, x_up=x_up)


def ratio(y, y_ref, err):
    return float(np.max(np.abs(np.asarray(y, dtype=np.float64) - y_ref) / err))


def gemma3n_config(pattern=PATTERN, layers=2, **text):
    """config.json as Gemma3nForConditionalGeneration's save_pretrained writes it (trimmed to
    the keys the MLP reads, and the multimodal shape)."""
    text_config = {"model_type": "gemma3n_text", "hidden_size": D, "intermediate_size": [H] * layers,
                   "num_hidden_layers": layers, "hidden_activation": "gelu_pytorch_tanh", **text}
    if pattern is not None:
        text_config["activation_sparsity_pattern"] = pattern
    return {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
            "text_config": text_config, "vision_config": {"model_type": "gemma3n_vision"},
            "audio_config": {"model_type": "gemma3n_audio"}}


def write_checkpoint(folder, layers, config):
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for n, w in enumerate(layers):
        for name, key in zip(NAMES, ("gate", "up", "down")):
            tensors[name.replace("{N}", str(n))] = w[key + ".weight"]
    files.write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def write_gguf(path, layers, scale=None):
    """As llama.cpp's Gemma3NModel converter writes it: blk.N.ffn_{gate,up,down}, the per-layer
    feed_forward_length array, activation_sparsity_scale = Normal(0, 1).icdf(s) in f32 per layer
    (−inf for s = 0)."""
    import gguf

    wr = gguf.GGUFWriter(str(path), "gemma3n")
    wr.add_block_count(len(layers))
    wr.add_embedding_length(D)
    wr.add_feed_forward_length([H] * len(layers))
    if scale is None:
        scale = [torch.distributions.normal.Normal(0, 1).icdf(torch.tensor(s, dtype=torch.float32)).item()
                 for s in PATTERN]
    if scale:  # [] writes no key, as a file converted before llama.cpp wrote it
        wr.add_activation_sparsity_scale(scale)
    for n, w in enumerate(layers):
        for m in ("gate", "up", "down"):
            wr.add_tensor(f"blk.{n}.ffn_{m}.weight", w[m + ".weight"].numpy())
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return path


def run_forward(tmp_path, run_ffn, path, layer, x):
    """`ffn forward` of one layer."""
    files.write_npy(tmp_path / "x.npy", x.numpy())
    run_ffn("forward", "--weights", path, "--layer", layer, "--input", tmp_path / "x.npy", "--output",
            tmp_path / "y.npy", "--quiet")
    return np.load(tmp_path / "y.npy")


@pytest.fixture(scope="module")
def case():
    layers = [layer_weights(seed) for seed in (1, 2)]
    x = torch.randn(6, D, generator=torch.Generator().manual_seed(7))
    return layers, x


def test_the_bound_decomposition_is_gemma3n_mlp(case):
    """bound.py's top-k (the reference's derivation restated) against the restated module:
    in float64 they agree to a quarter of the f32 bound (the module's f32 Φ⁻¹(0.95) is the
    only difference); torch's own f32 run of the module stays within the bound; the block
    without the top-k misses it by far more."""
    layers, x = case
    y_exact, err = exact_and_bound(layers[0], x, 0.95)
    y_module = module_output(layers[0], 0.95, x)
    assert ratio(y_module, y_exact, err) <= 0.25
    assert ratio(module_output(layers[0], 0.95, x, torch.float32), y_module, err) <= 1.0
    y_plain, _ = exact_and_bound(layers[0], x, 0.0)
    assert ratio(y_plain, y_module, err) > 100.0
    # The top-k keeps about 5% of the gate channels (the Gaussian quantile's purpose).
    with torch.no_grad():
        kept = (Gemma3nTextMLP(layers[0]["gate.weight"].double(), None, None, 0.95)
                ._gaussian_topk(F.linear(x.double(), layers[0]["gate.weight"].double())) > 0).double().mean()
    assert 0.01 < float(kept) < 0.12, float(kept)


def test_the_quantile_is_torchs(case):
    """bound.normal_quantile (bisection) is torch's Normal.icdf, in float64."""
    for s in (0.025, 0.5, 0.95, 0.999):
        torch_value = torch.distributions.normal.Normal(0.0, 1.0).icdf(torch.tensor(s, dtype=torch.float64)).item()
        assert abs(bound.normal_quantile(s) - torch_value) < 1e-12


def test_info_names_each_layers_gate_sparsity(tmp_path, run_ffn, case):
    layers, _ = case
    folder = write_checkpoint(tmp_path / "ckpt", layers, gemma3n_config())
    info = run_ffn("info", "--weights", folder).stdout
    assert "family: Gemma 3n (config.json model_type 'gemma3n')" in info, info
    assert "gate sparsity 0.95 (config.json text_config.activation_sparsity_pattern)" in info, info
    assert info.count("gate sparsity") == 1, info  # layer 1's pattern entry is 0
    rows = json.loads(run_ffn("info", "--weights", folder, "--json").stdout)["layers"]
    assert [r.get("gate_sparsity") for r in rows] == [0.95, None]
    assert [r["variant"] for r in rows] == ["gated_gelu_tanh"] * 2


def test_config_defaults_and_errors(tmp_path, run_ffn, case):
    layers, _ = case
    # No pattern: Gemma3nTextConfig's default, 0.95 × 10 then 0 when num_hidden_layers > 10.
    folder = write_checkpoint(tmp_path / "default35", layers, gemma3n_config(pattern=None, layers=35))
    info = run_ffn("info", "--weights", folder, "--layer", 0).stdout
    assert "gate sparsity 0.95 (Gemma3nTextConfig's default activation_sparsity_pattern" in info, info
    folder = write_checkpoint(tmp_path / "default2", layers, gemma3n_config(pattern=None, layers=2))
    assert "gate sparsity" not in run_ffn("info", "--weights", folder).stdout
    # A pattern with no entry for the layer, or a value that is no fraction, is refused by name.
    folder = write_checkpoint(tmp_path / "short", layers, gemma3n_config(pattern=[0.95]))
    r = run_ffn("info", "--weights", folder, "--layer", 1, check=False)
    assert r.returncode != 0 and "text_config.activation_sparsity_pattern has 1 entries, none for layer 1" in r.stderr
    folder = write_checkpoint(tmp_path / "one", layers, gemma3n_config(pattern=[1.0, 0.0]))
    r = run_ffn("info", "--weights", folder, "--layer", 0, check=False)
    assert r.returncode != 0 and "activation_sparsity_pattern[0] = 1.0 is not a sparsity in [0, 1)" in r.stderr


def test_layer_without_top_k_runs_as_the_module(tmp_path, run_ffn, ffn_module, case):
    """Layer 1 (pattern 0): a plain GeGLU-tanh block, through `ffn forward` and ffn.load."""
    layers, x = case
    folder = write_checkpoint(tmp_path / "ckpt", layers, gemma3n_config())
    y_module = module_output(layers[1], 0.0, x)
    _, err = exact_and_bound(layers[1], x, 0.0)
    assert ratio(run_forward(tmp_path, run_ffn, folder, 1, x), y_module, err) <= 1.0
    assert ratio(ffn_module.load(str(folder), layer=1)(x.numpy()), y_module, err) <= 1.0


def test_sparse_layer_runs_as_the_module(tmp_path, run_ffn, ffn_module, case):
    """Layer 0 (pattern 0.95) through `ffn forward` and ffn.load; the twin — the same file with
    the pattern [0, 0] — misses the module by more than a hundred times the bound."""
    layers, x = case
    y_module = module_output(layers[0], 0.95, x)
    _, err = exact_and_bound(layers[0], x, 0.95)
    twin = write_checkpoint(tmp_path / "twin", layers, gemma3n_config(pattern=[0.0, 0.0]))
    assert ratio(run_forward(tmp_path, run_ffn, twin, 0, x), y_module, err) > 100.0
    folder = write_checkpoint(tmp_path / "ckpt", layers, gemma3n_config())
    assert ratio(run_forward(tmp_path, run_ffn, folder, 0, x), y_module, err) <= 1.0
    assert ratio(ffn_module.load(str(folder), layer=0)(x.numpy()), y_module, err) <= 1.0


def test_training_refuses_the_top_k(tmp_path, ffn_module, case):
    """The f32 Block (training) has no top-k: its forward refuses by name."""
    layers, x = case
    folder = write_checkpoint(tmp_path / "ckpt", layers, gemma3n_config())
    block = ffn_module.load_trainable(str(folder), layer=0)
    with pytest.raises(ffn_module.Error, match="gate_sparsity = 0.95"):
        block(x.numpy())
    ffn_module.load_trainable(str(folder), layer=1)(x.numpy())  # no top-k: runs


def test_gguf_twin(tmp_path, run_ffn, case):
    """The converter's GGUF: each layer's sparsity from its activation_sparsity_scale (Φ⁻¹(s) in
    f32, −inf for 0); a file without the key gets llama.cpp's graph's fixed 0.95 for layers 0–9.
    Layer 1 runs as the plain module, layer 0 as the sparse one."""
    layers, x = case
    path = write_gguf(tmp_path / "model.gguf", layers)
    info = run_ffn("info", "--weights", path).stdout
    assert "family: Gemma 3n (general.architecture 'gemma3n')" in info, info
    assert "gate sparsity 0.95 (GGUF metadata gemma3n.activation_sparsity_scale)" in info, info
    assert info.count("gate sparsity") == 1, info
    rows = json.loads(run_ffn("info", "--weights", path, "--json").stdout)["layers"]
    assert abs(rows[0]["gate_sparsity"] - 0.95) < 1e-7 and "gate_sparsity" not in rows[1]  # Φ of an f32 quantile
    _, err1 = exact_and_bound(layers[1], x, 0.0)
    assert ratio(run_forward(tmp_path, run_ffn, path, 1, x), module_output(layers[1], 0.0, x), err1) <= 1.0
    # Without the key: llama.cpp's graph's ten sparse layers, both of this file's.
    fixed = write_gguf(tmp_path / "fixed.gguf", layers, scale=[])
    info = run_ffn("info", "--weights", fixed).stdout
    assert info.count("gate sparsity 0.95 (general.architecture 'gemma3n': llama.cpp's graph's 0.95 for layers "
                      "0–9 (the file has no gemma3n.activation_sparsity_scale))") == 2, info
    # A scale that is no quantile of a sparsity is refused, naming the key.
    bad = write_gguf(tmp_path / "bad.gguf", layers, scale=[float("nan"), float("-inf")])
    r = run_ffn("info", "--weights", bad, "--layer", 0, check=False)
    assert r.returncode != 0 and "gemma3n.activation_sparsity_scale[0] = nan" in r.stderr, r.stderr
    _, err0 = exact_and_bound(layers[0], x, 0.95)
    assert ratio(run_forward(tmp_path, run_ffn, path, 0, x), module_output(layers[0], 0.95, x), err0) <= 1.0


def test_torch_patch_leaves_a_sparse_gemma3n_mlp(ffn_module, case):
    """ffn.torch.patch does not replace a Gemma3nTextMLP whose activation_sparsity > 0 (its
    blocks have no top-k): it leaves it, saying why; a layer with sparsity 0 is replaced."""
    import ffn.torch

    class Gemma3nTextMLPModule(torch.nn.Module):  # Gemma3nTextMLP's children and attributes
        def __init__(self, sparsity):
            super().__init__()
            self.gate_proj = torch.nn.Linear(D, H, bias=False)
            self.up_proj = torch.nn.Linear(D, H, bias=False)
            self.down_proj = torch.nn.Linear(H, D, bias=False)
            self.act_fn = torch.nn.GELU(approximate="tanh")
            self.activation_sparsity = sparsity

        def forward(self, x):
            m = Gemma3nTextMLP(self.gate_proj.weight, self.up_proj.weight, self.down_proj.weight,
                               self.activation_sparsity)
            return m(x)

    model = torch.nn.ModuleDict({"mlp0": Gemma3nTextMLPModule(0.95), "mlp1": Gemma3nTextMLPModule(0.0)})
    report = ffn.torch.patch(model)
    assert [e.name for e in report.replaced] == ["mlp1"], str(report)
    assert [e.name for e in report.left] == ["mlp0"], str(report)
    assert "activation_sparsity=0.95" in report.left[0].reason, str(report)


def test_trainable_block_for_inference_runs_the_top_k(tmp_path, ffn_module, case):
    """ffn.load_trainable(…).for_inference(): the f32 Block's weights laid out for inference keep
    the layer's gate sparsity."""
    layers, x = case
    folder = write_checkpoint(tmp_path / "ckpt", layers, gemma3n_config())
    inference = ffn_module.load_trainable(str(folder), layer=0).for_inference()
    _, err = exact_and_bound(layers[0], x, 0.95)
    assert ratio(inference(x.numpy()), module_output(layers[0], 0.95, x), err) <= 1.0
