"""Every dense family of `ffn info --families`, as its checkpoints are written: a small
two-layer checkpoint in the family's tensor names, layout and config.json keys (as
transformers' save_pretrained writes them; sharded for two families; GGUF twins as llama.cpp's
converter names them), run through `ffn forward` and `ffn.load` with no --variant, against the
family's MLP module restated from transformers' source (the class is named in each case).

Tolerance: the rigorous f32 bound of bound.forward_and_bound (about 2·(d + hidden)·u of the
magnitude of each output), computed from the gate/up/down the case stored; the restated
module must agree with that decomposition to float64 rounding, so a wrong reading of the
family's layout (which half of a fused tensor is the gate) fails the test whichever side
makes it. Each family also has a wrong-layout twin (gate and up swapped, the halves of a fused
tensor swapped, or the activation the config names changed) which the test shows misses the
module by more than a hundred times the bound."""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import bound
import files

D, H = 64, 96


# ---- the families' activations, restated from transformers' activations.py -------------------
def gelu_new(x):  # NewGELUActivation (gelu_new, gelu_pytorch_tanh: the same function)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def bloom_gelu(x):  # modeling_bloom.bloom_gelu_forward
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def relu2(x):  # ReLUSquaredActivation
    return torch.square(F.relu(x))


ACT = {"swish": F.silu, "gelu": F.gelu, "gelu_tanh": gelu_new, "relu": F.relu, "relu2": relu2}


# ---- the families' MLP modules, restated (x: [T, D] float64; t: the file's tensors of one layer) ---
def llama_mlp(act):  # LlamaMLP (and Mistral, Qwen2/3, Gemma, Cohere, OLMo, Granite, InternLM2, EXAONE…)
    def mlp(x, t, p):
        gate, up, down = p
        b = lambda n: t.get(n[:-6] + "bias")  # noqa: E731 (Granite's mlp_bias)
        return F.linear(act(F.linear(x, t[gate], b(gate))) * F.linear(x, t[up], b(up)), t[down], b(down))
    return mlp


def fused_gate_up_mlp(act):  # Phi3MLP, Glm4MLP: gate, up_states = gate_up_proj(x).chunk(2, dim=-1)
    def mlp(x, t, p):
        gate_up, down = p
        gate, up = F.linear(x, t[gate_up]).chunk(2, dim=-1)
        return F.linear(up * act(gate), t[down])
    return mlp


def chatglm_mlp(x, t, p):  # ChatGLM's MLP: swiglu(x) = silu(x0) * x1, x0, x1 = chunk(x, 2, dim=-1)
    h_to_4h, four_h_to_h = p
    x0, x1 = torch.chunk(F.linear(x, t[h_to_4h]), 2, dim=-1)
    return F.linear(F.silu(x0) * x1, t[four_h_to_h])


def two_matrix_mlp(act, bias=True):  # PhiMLP, GPTNeoXMLP, FalconMLP, GPTJMLP, BloomMLP, MptMLP, BERT…
    def mlp(x, t, p):
        up, down = p
        b = (lambda n: t[n[:-6] + "bias"]) if bias else (lambda n: None)
        return F.linear(act(F.linear(x, t[up], b(up))), t[down], b(down))
    return mlp


def gpt2_mlp(x, t, p):  # GPT2MLP over Conv1D: x @ weight + bias, weight [in, out]
    up, down = p
    h = gelu_new(x @ t[up] + t[up[:-6] + "bias"])
    return h @ t[down] + t[down[:-6] + "bias"]


class Case:
    """names: the layer's tensor names (gate, up, down) with {N}, or (gate_up, down) for a fused
    one; fused_gate_first: the order of a fused tensor's halves; conv1d: stored [in, out]."""

    def __init__(self, model_type, config, names, module, activation, gated=True, bias=False, fused=False,
                 fused_gate_first=True, conv1d=False, gguf=None, sharded=False, wrong_activation=None):
        self.model_type, self.config, self.names, self.module = model_type, config, names, module
        self.activation, self.gated, self.bias, self.fused = activation, gated, bias, fused
        self.fused_gate_first, self.conv1d, self.gguf, self.sharded = fused_gate_first, conv1d, gguf, sharded
        self.wrong_activation = wrong_activation  # for a 2-matrix family's twin: another config value


L = "model.layers.{N}.mlp."
LLAMA_NAMES = (L + "gate_proj.weight", L + "up_proj.weight", L + "down_proj.weight")


def llama_like(model_type, key="hidden_act", value="silu", activation="swish", names=LLAMA_NAMES, **kw):
    config = {"model_type": model_type, key: value} if key else {"model_type": model_type}
    return Case(model_type, config, names, llama_mlp(ACT[activation]), activation, **kw)


def plain(model_type, config, up, down, activation, act=None, bias=True, **kw):
    return Case(model_type, config, (up, down), two_matrix_mlp(act or ACT[activation], bias), activation,
                gated=False, bias=bias, **kw)


# Family (the row's name in `ffn info --families`) → its case. Every dense row that runs has one.
CASES = {
    "Llama 1–3 (and Yi, Mistral-Nemo, DeepSeek-R1 distills…)": llama_like("llama", gguf="llama"),
    "Mistral": llama_like("mistral", sharded=True),
    "Qwen 2, 2.5, 3": llama_like("qwen3", gguf="qwen3"),
    # GemmaMLP reads hidden_activation; an early Gemma config's hidden_act 'gelu' is not it.
    "Gemma 1": Case("gemma", {"model_type": "gemma", "hidden_act": "gelu"}, LLAMA_NAMES, llama_mlp(gelu_new),
                    "gelu_tanh", gguf="gemma"),
    # Gemma3ForConditionalGeneration: the language model under language_model.model, its
    # settings in text_config.
    "Gemma 2, Gemma 3": Case(
        "gemma3", {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
                                                           "hidden_activation": "gelu_pytorch_tanh"}},
        tuple(n.replace("model.layers", "language_model.model.layers") for n in LLAMA_NAMES), llama_mlp(gelu_new),
        "gelu_tanh", gguf="gemma3", sharded=True),
    "StableLM 2": llama_like("stablelm"),
    "Phi-2": plain("phi", {"model_type": "phi", "hidden_act": "gelu_new"}, L + "fc1.weight", L + "fc2.weight",
                   "gelu_tanh", gguf="phi2", wrong_activation=("hidden_act", "relu")),
    "Phi-3, Phi-3.5, Phi-4-mini": Case("phi3", {"model_type": "phi3", "hidden_act": "silu"},
                                       (L + "gate_up_proj.weight", L + "down_proj.weight"),
                                       fused_gate_up_mlp(F.silu), "swish", fused=True, gguf="phi3"),
    "GLM-4 (transformers' Glm4)": Case("glm4", {"model_type": "glm4", "hidden_act": "silu"},
                                       (L + "gate_up_proj.weight", L + "down_proj.weight"),
                                       fused_gate_up_mlp(F.silu), "swish", fused=True),
    "ChatGLM 2/3, GLM-4 (THUDM's code)": Case(
        "chatglm", {"model_type": "chatglm", "ffn_hidden_size": H},
        ("transformer.encoder.layers.{N}.mlp.dense_h_to_4h.weight", "transformer.encoder.layers.{N}.mlp.dense_4h_to_h.weight"),
        chatglm_mlp, "swish", fused=True, gguf="chatglm"),
    "Cohere Command-R, Command-R7B": llama_like("cohere"),
    "OLMo, OLMo-2": llama_like("olmo2"),
    "Granite 3": Case("granite", {"model_type": "granite", "hidden_act": "silu", "mlp_bias": True}, LLAMA_NAMES,
                      llama_mlp(F.silu), "swish", bias=True),
    "InternLM 2": llama_like("internlm2", names=tuple("model.layers.{N}.feed_forward." + w + ".weight"
                                                      for w in ("w1", "w3", "w2"))),
    "EXAONE 3": llama_like("exaone", key="activation_function",
                           names=tuple("transformer.h.{N}.mlp." + w + ".weight" for w in ("c_fc_0", "c_fc_1", "c_proj"))),
    "Nemotron": plain("nemotron", {"model_type": "nemotron", "hidden_act": "relu2"}, L + "up_proj.weight",
                      L + "down_proj.weight", "relu2", bias=False, gguf="nemotron",
                      wrong_activation=("hidden_act", "relu")),
    # PersimmonMLP: dense_4h_to_h(act(dense_h_to_4h(x))), hidden_act relu2, biases.
    "Persimmon, Fuyu": plain("persimmon", {"model_type": "persimmon", "hidden_act": "relu2"},
                             L + "dense_h_to_4h.weight", L + "dense_4h_to_h.weight", "relu2",
                             wrong_activation=("hidden_act", "relu")),
    "GPT-2": Case("gpt2", {"model_type": "gpt2", "activation_function": "gelu_new"},
                  ("transformer.h.{N}.mlp.c_fc.weight", "transformer.h.{N}.mlp.c_proj.weight"), gpt2_mlp, "gelu_tanh",
                  gated=False, bias=True, conv1d=True, wrong_activation=("activation_function", "relu")),
    "StarCoder, SantaCoder (GPT-BigCode)": plain(
        "gpt_bigcode", {"model_type": "gpt_bigcode", "activation_function": "gelu_pytorch_tanh"},
        "transformer.h.{N}.mlp.c_fc.weight", "transformer.h.{N}.mlp.c_proj.weight", "gelu_tanh",
        wrong_activation=("activation_function", "relu")),
    "StarCoder2": plain("starcoder2", {"model_type": "starcoder2", "hidden_act": "gelu_pytorch_tanh"},
                        L + "c_fc.weight", L + "c_proj.weight", "gelu_tanh", gguf="starcoder2",
                        wrong_activation=("hidden_act", "silu")),
    "GPT-NeoX, Pythia": plain("gpt_neox", {"model_type": "gpt_neox", "hidden_act": "gelu"},
                              "gpt_neox.layers.{N}.mlp.dense_h_to_4h.weight",
                              "gpt_neox.layers.{N}.mlp.dense_4h_to_h.weight", "gelu", gguf="gptneox",
                              wrong_activation=("hidden_act", "relu")),
    # FalconConfig's activation defaults to 'gelu' (exact); a config that omits it runs that.
    "Falcon": plain("falcon", {"model_type": "falcon"}, "transformer.h.{N}.mlp.dense_h_to_4h.weight",
                    "transformer.h.{N}.mlp.dense_4h_to_h.weight", "gelu", bias=False,
                    wrong_activation=("activation", "relu")),
    "GPT-J": plain("gptj", {"model_type": "gptj", "activation_function": "gelu_new"},
                   "transformer.h.{N}.mlp.fc_in.weight", "transformer.h.{N}.mlp.fc_out.weight", "gelu_tanh",
                   wrong_activation=("activation_function", "relu")),
    # BloomMLP hard-codes bloom_gelu (the tanh form); BloomModel saves without 'transformer.'.
    "BLOOM": plain("bloom", {"model_type": "bloom"}, "h.{N}.mlp.dense_h_to_4h.weight",
                   "h.{N}.mlp.dense_4h_to_h.weight", "gelu_tanh", act=bloom_gelu, gguf="bloom"),
    # MptMLP hard-codes nn.GELU(approximate="none") and bias=False.
    "MPT": plain("mpt", {"model_type": "mpt"}, "transformer.blocks.{N}.ffn.up_proj.weight",
                 "transformer.blocks.{N}.ffn.down_proj.weight", "gelu", bias=False),
    # T5DenseGatedActDense: wo(act(wi_0(x)) * wi_1(x)); 'gated-gelu' means gelu_new.
    "T5 v1.1, Flan-T5, mT5, UMT5 (encoder)": llama_like(
        "t5", key="feed_forward_proj", value="gated-gelu", activation="gelu_tanh",
        names=tuple("encoder.block.{N}.layer.1.DenseReluDense." + w + ".weight" for w in ("wi_0", "wi_1", "wo")),
        gguf="t5"),
    "BERT, RoBERTa": plain("bert", {"model_type": "bert", "hidden_act": "gelu"},
                           "bert.encoder.layer.{N}.intermediate.dense.weight",
                           "bert.encoder.layer.{N}.output.dense.weight", "gelu", gguf="bert",
                           wrong_activation=("hidden_act", "relu")),
}


def block_weights(case, seed):
    """The decomposed block (gate/up/down .weight/.bias, torch f32), scaled so that the
    pre-activations are O(1): every activation's curved part is exercised."""
    g = torch.Generator().manual_seed(seed)
    w = {"up.weight": torch.randn(H, D, generator=g) / math.sqrt(D),
         "down.weight": torch.randn(D, H, generator=g) / math.sqrt(H)}
    if case.gated:
        w["gate.weight"] = torch.randn(H, D, generator=g) / math.sqrt(D)
    if case.bias:
        for m in ("up", "gate") if case.gated else ("up",):
            w[m + ".bias"] = 0.1 * torch.randn(H, generator=g)
        w["down.bias"] = 0.1 * torch.randn(D, generator=g)
    return w


def stored_tensors(case, w, layer, swap=False):
    """One layer's tensors in the family's names and layout (swap: gate and up exchanged)."""
    gate, up = ("up", "gate") if swap else ("gate", "up")
    names = [n.replace("{N}", str(layer)) for n in case.names]
    out = {}

    def put(name, key):
        out[name] = w[key + ".weight"].t().contiguous() if case.conv1d else w[key + ".weight"]
        if key + ".bias" in w:
            out[name[:-6] + "bias"] = w[key + ".bias"]

    if case.fused:
        first, second = (gate, up) if case.fused_gate_first else (up, gate)
        out[names[0]] = torch.cat([w[first + ".weight"], w[second + ".weight"]])
        if case.bias:
            out[names[0][:-6] + "bias"] = torch.cat([w[first + ".bias"], w[second + ".bias"]])
        put(names[1], "down")
    elif case.gated:
        put(names[0], gate)
        put(names[1], up)
        put(names[2], "down")
    else:
        put(names[0], "up")
        put(names[1], "down")
    return out


def write_checkpoint(folder, case, layers, swap=False, config=None):
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for n, w in enumerate(layers):
        tensors.update(stored_tensors(case, w, n, swap))
    if case.sharded:  # each layer split across two shards, as save_pretrained's max_shard_size does
        shards, weight_map = [{}, {}], {}
        for i, (name, t) in enumerate(sorted(tensors.items())):
            shards[i % 2][name] = t
            weight_map[name] = f"model-0000{i % 2 + 1}-of-00002.safetensors"
        for i, s in enumerate(shards):
            files.write_safetensors(folder / f"model-0000{i + 1}-of-00002.safetensors", s, metadata={"format": "pt"})
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    else:
        files.write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config or case.config))
    return folder


def module_output(case, w, layer, x):
    """The family's module on the tensors as the file holds them, in float64."""
    t = {k: v.double() for k, v in stored_tensors(case, w, layer).items()}
    names = tuple(n.replace("{N}", str(layer)) for n in case.names)
    with torch.no_grad():
        return case.module(x.double(), t, names).numpy()


def ratio_to_bound(case, w, y, x, layer):
    """max |y − module| / bound; also checks that the module and the decomposition agree."""
    state = {k: v.double().numpy() for k, v in w.items()}
    y_exact, err = bound.forward_and_bound(state, x.double().numpy(), case.activation, case.gated)
    y_module = module_output(case, w, layer, x)
    # To 1e-7 of the magnitude: BLOOM's module writes √(2/π) as 0.79788456 (9 digits), which
    # moves its outputs by ~1e-9; the f32 bound is ~1e-5 of the magnitude.
    np.testing.assert_allclose(y_module, y_exact, rtol=1e-7, atol=1e-7 * float(np.max(np.abs(y_exact))))
    return float(np.max(np.abs(y.astype(np.float64) - y_module) / err))


def run_forward(tmp_path, run_ffn, path, x, layer=1, *extra):
    files.write_npy(tmp_path / "x.npy", x.numpy())
    run_ffn("forward", "--weights", path, "--layer", layer, "--input", tmp_path / "x.npy", "--output",
            tmp_path / "y.npy", "--quiet", *extra)
    return np.load(tmp_path / "y.npy")


def test_every_dense_family_has_a_case(run_ffn):
    rows = json.loads(run_ffn("info", "--families", "--json").stdout)
    # Gemma 3n's gate sparsity has its own file (test_gemma3n.py), its restated module there.
    dense = {r["family"] for r in rows if not r["moe"] and r["supported"]} - {"Gemma 3n"}
    assert dense == set(CASES), (dense ^ set(CASES))


def test_the_readme_shows_the_table(run_ffn):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = run_ffn("info", "--families").stdout
    assert table in readme, "README.md's family table differs from `ffn info --families`; paste it again"


@pytest.mark.parametrize("family", list(CASES))
def test_family_runs_as_its_module(tmp_path, run_ffn, ffn_module, family):
    case = CASES[family]
    layers = [block_weights(case, seed) for seed in (1, 2)]
    folder = write_checkpoint(tmp_path / "ckpt", case, layers)
    x = torch.randn(5, D, generator=torch.Generator().manual_seed(7))
    assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, folder, x), x, 1) <= 1.0
    block = ffn_module.load(str(folder), layer=1)
    assert ratio_to_bound(case, layers[1], block(x.numpy()), x, 1) <= 1.0
    info = run_ffn("info", "--weights", folder).stdout
    assert f"family: {family} (config.json" in info, info

    # The wrong-layout twin: what a loader reading the layout wrong would give.
    extra = ()
    if case.gated:
        twin = write_checkpoint(tmp_path / "twin", case, layers, swap=True)
    elif case.wrong_activation:
        key, value = case.wrong_activation
        twin = write_checkpoint(tmp_path / "twin", case, layers, config={**case.config, key: value})
    else:  # the activation is fixed by the family's module: run the file as ReLU instead
        twin = write_checkpoint(tmp_path / "twin", case, layers)
        (twin / "config.json").unlink()
        extra = ("--variant", "relu")
    assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, twin, x, 1, *extra), x, 1) > 100.0


def write_gguf(path, case, layers, swap=False):
    """The GGUF file llama.cpp's converter writes for the family: blk.N.ffn_{gate,up,down}
    (T5's encoder enc.blk.N.…), a fused gate and up as one ffn_up of 2H rows, biases as .bias."""
    import gguf

    wr = gguf.GGUFWriter(str(path), case.gguf)
    wr.add_block_count(len(layers))
    wr.add_embedding_length(D)
    wr.add_feed_forward_length(H)
    prefix = "enc.blk" if case.gguf == "t5" else "blk"
    for n, w in enumerate(layers):
        gate, up = ("up", "gate") if swap else ("gate", "up")
        if case.fused:
            wr.add_tensor(f"{prefix}.{n}.ffn_up.weight", torch.cat([w[gate + ".weight"], w[up + ".weight"]]).numpy())
        else:
            wr.add_tensor(f"{prefix}.{n}.ffn_up.weight", w[up + ".weight"].numpy())
            if case.gated:
                wr.add_tensor(f"{prefix}.{n}.ffn_gate.weight", w[gate + ".weight"].numpy())
        wr.add_tensor(f"{prefix}.{n}.ffn_down.weight", w["down.weight"].numpy())
        if case.bias:
            wr.add_tensor(f"{prefix}.{n}.ffn_up.bias", w[up + ".bias"].numpy())
            wr.add_tensor(f"{prefix}.{n}.ffn_down.bias", w["down.bias"].numpy())
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return path


@pytest.mark.parametrize("family", [f for f, c in CASES.items() if c.gguf])
def test_family_gguf_runs_as_its_module(tmp_path, run_ffn, family):
    case = CASES[family]
    layers = [block_weights(case, seed) for seed in (1, 2)]
    path = write_gguf(tmp_path / "model.gguf", case, layers)
    x = torch.randn(4, D, generator=torch.Generator().manual_seed(8))
    assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, path, x), x, 1) <= 1.0
    assert f"family: {family} (general.architecture '{case.gguf}')" in run_ffn("info", "--weights", path).stdout
    if case.gated:  # the twin: gate and up (a fused tensor's halves) exchanged
        twin = write_gguf(tmp_path / "twin.gguf", case, layers, swap=True)
        assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, twin, x), x, 1) > 100.0


def test_config_errors_tell_the_truth(tmp_path, run_ffn):
    case = CASES["Llama 1–3 (and Yi, Mistral-Nemo, DeepSeek-R1 distills…)"]
    layers = [block_weights(case, s) for s in (1, 2)]
    folder = write_checkpoint(tmp_path / "unknown", case, layers, config={"model_type": "some_new_model"})
    r = run_ffn("info", "--weights", folder, check=False)
    assert r.returncode != 0
    assert "has none of the keys hidden_act hidden_activation" in r.stderr, r.stderr
    assert "model_type 'some_new_model' is not in ffn's family table" in r.stderr, r.stderr
    assert "no config.json" not in r.stderr
    (folder / "config.json").unlink()
    r = run_ffn("info", "--weights", folder, check=False)
    assert "no config.json beside it" in r.stderr, r.stderr
    # Gemma 3n, once refused, runs (test_gemma3n.py); its config's errors are tested there.
    # T5's feed_forward_proj says whether the block is gated; a file that disagrees is refused.
    t5 = CASES["T5 v1.1, Flan-T5, mT5, UMT5 (encoder)"]
    folder = write_checkpoint(tmp_path / "t5", t5, [block_weights(t5, s) for s in (1, 2)],
                              config={"model_type": "t5", "feed_forward_proj": "relu"})
    r = run_ffn("info", "--weights", folder, check=False)
    assert "feed_forward_proj 'relu' means a 2-matrix block" in r.stderr, r.stderr


def test_a_fused_quantised_gate_up_runs_as_the_two_matrices(tmp_path, run_ffn):
    """Phi-3's GGUF ffn_up of 2H rows in q8_0 is read in place as two row windows: the same
    bits as the same rows stored as separate ffn_gate and ffn_up (q8_0 quantises each row on
    its own, so the fused tensor's bytes are the two matrices' back to back)."""
    import gguf

    case = CASES["Phi-3, Phi-3.5, Phi-4-mini"]
    layers = [block_weights(case, seed) for seed in (1, 2)]
    q8 = gguf.GGMLQuantizationType.Q8_0

    def write(path, arch, fused):
        wr = gguf.GGUFWriter(str(path), arch)
        wr.add_block_count(2)
        wr.add_embedding_length(D)
        wr.add_feed_forward_length(H)
        for n, w in enumerate(layers):
            gate, up = gguf.quantize(w["gate.weight"].numpy(), q8), gguf.quantize(w["up.weight"].numpy(), q8)
            if fused:
                wr.add_tensor(f"blk.{n}.ffn_up.weight", np.concatenate([gate, up]), raw_dtype=q8)
            else:
                wr.add_tensor(f"blk.{n}.ffn_gate.weight", gate, raw_dtype=q8)
                wr.add_tensor(f"blk.{n}.ffn_up.weight", up, raw_dtype=q8)
            wr.add_tensor(f"blk.{n}.ffn_down.weight", gguf.quantize(w["down.weight"].numpy(), q8), raw_dtype=q8)
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        return path

    x = torch.randn(3, D, generator=torch.Generator().manual_seed(9))
    y_fused = run_forward(tmp_path, run_ffn, write(tmp_path / "phi3.gguf", "phi3", True), x)
    y_split = run_forward(tmp_path, run_ffn, write(tmp_path / "llama.gguf", "llama", False), x)
    assert np.array_equal(y_fused.view(np.uint32), y_split.view(np.uint32))
    info = json.loads(run_ffn("info", "--weights", tmp_path / "phi3.gguf", "--json").stdout)
    assert {m["type"] for m in info["layers"][1]["matrices"].values()} == {"q8_0"}, info


def test_from_torch_reads_fused_and_gemma_modules(ffn_module):
    """ffn.from_torch of Phi3MLP (gate_up_proj, gate rows first) and of Gemma2MLP (its
    config's hidden_activation, no hidden_act), restated with their attribute names: the
    block is the module within the f32 bound."""

    class Phi3MLP(torch.nn.Module):  # transformers' Phi3MLP
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.gate_up_proj = torch.nn.Linear(D, 2 * H, bias=False)
            self.down_proj = torch.nn.Linear(H, D, bias=False)

        def forward(self, x):
            gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
            return self.down_proj(up * F.silu(gate))

    class Gemma2MLP(torch.nn.Module):  # transformers' Gemma2MLP
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.gate_proj = torch.nn.Linear(D, H, bias=False)
            self.up_proj = torch.nn.Linear(D, H, bias=False)
            self.down_proj = torch.nn.Linear(H, D, bias=False)

        def forward(self, x):
            return self.down_proj(gelu_new(self.gate_proj(x)) * self.up_proj(x))

    class Config:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    torch.manual_seed(4)
    x = torch.randn(3, D)
    for module, variant, activation in ((Phi3MLP(Config(hidden_act="silu")), "swiglu", "swish"),
                                        (Gemma2MLP(Config(hidden_activation="gelu_pytorch_tanh")), "gated_gelu_tanh",
                                         "gelu_tanh")):
        block = ffn_module.from_torch(module)
        assert block.variant == variant
        state = {k.replace("_proj", ""): v.double().numpy() for k, v in module.state_dict().items()}
        if "gate_up.weight" in state:
            state["gate.weight"], state["up.weight"] = np.split(state.pop("gate_up.weight"), 2)
        _, err = bound.forward_and_bound(state, x.double().numpy(), activation, True)
        with torch.no_grad():
            want = module.double()(x.double()).numpy()
        assert np.all(np.abs(block(x.numpy()).astype(np.float64) - want) <= err)


def test_llama4_dense_layers_run_as_swiglu(tmp_path, run_ffn, ffn_module):
    """Llama 4's dense layers (those between its MoE layers) keep Llama4TextMLP's
    feed_forward.{gate,up,down}_proj names; they run as its module, family Llama 4."""
    names = tuple("model.layers.{N}.feed_forward." + p + ".weight" for p in ("gate_proj", "up_proj", "down_proj"))
    case = Case("llama4_text", {"model_type": "llama4_text", "hidden_act": "silu"}, names, llama_mlp(F.silu),
                "swish")
    layers = [block_weights(case, seed) for seed in (1, 2)]
    folder = write_checkpoint(tmp_path / "ckpt", case, layers)
    x = torch.randn(3, D, generator=torch.Generator().manual_seed(5))
    assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, folder, x), x, 1) <= 1.0
    assert ratio_to_bound(case, layers[1], ffn_module.load(str(folder), layer=1)(x.numpy()), x, 1) <= 1.0
    assert "family: Llama 4 (config.json model_type 'llama4_text')" in run_ffn("info", "--weights", folder).stdout
    twin = write_checkpoint(tmp_path / "twin", case, layers, swap=True)
    assert ratio_to_bound(case, layers[1], run_forward(tmp_path, run_ffn, twin, x), x, 1) > 100.0
