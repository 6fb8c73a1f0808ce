"""Mixture-of-experts blocks (issue 24) against PyTorch restatements of the Hugging Face
modules (moe_reference.py): Mixtral, Qwen2-MoE, Qwen3-MoE and DeepSeek-V3, each written as
HF per-expert tensors, HF's fused 3-D expert tensors and GGUF (gguf-py's writer), run through
`ffn forward --layer 1` and `ffn.load(path, layer=1)`.

Tolerance: moe_reference.moe_bound, element by element — the f32 bound of bound.py for every
chosen expert and shared expert, plus the routing weights' f32 error (derived in
moe_reference.weight_error) times each expert's output, plus the weighted sum's rounding. It
holds for any f32 implementation (PyTorch's f32 run of the same modules is checked against
it) and is ~5e-4 of the largest output; every routing mistake tried (a wrong expert, a
missing or extra renormalisation, a missing scale or shared expert, an ungated shared
expert, a wrong sign, gate and up swapped, DeepSeek's bias or groups misused) exceeds it by
more than 100× (test_the_bound_rejects_each_mistake). Inputs are drawn away from routing
near-ties, so an f32 router must choose what the float64 reference chooses.

The Python-only tests (reference, writers, bound, mutations) need no ffn; the others run
the ffn binary and the module.
"""
import re

import numpy as np
import pytest
import torch

import files
import moe_reference as mr
import opens

FAMILIES = ["mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3"]  # the others: test_moe_families.py
FORMATS = ["hf", "hf_fused", "gguf"]
TOKENS = 12
MUTATION_MARGIN = 100  # a mistake must exceed the bound at least this many times somewhere

# The mistakes each family can make (those that change nothing for a family are left out).
MUTATIONS = {
    "mixtral": ["wrong_expert", "no_renorm", "sign", "swapped_gate_up"],
    "qwen2_moe": ["wrong_expert", "renorm", "no_shared", "ungated_shared", "sign", "swapped_gate_up"],
    "qwen3_moe": ["wrong_expert", "no_renorm", "sign", "swapped_gate_up"],
    "deepseek_v3": ["wrong_expert", "no_renorm", "no_scale", "no_shared", "sign", "bias_in_weights", "no_bias",
                    "no_groups", "swapped_gate_up"],
}


def gguf_module():
    return pytest.importorskip("gguf", reason="gguf-py missing: run the tests with scripts/python-env.sh's Python")


def reference(spec, w, x, q8_0=False, operand_rounding=0.0):
    """(y_ref, bound, r, idx, weights) of the float64 module for the f32 inputs x."""
    with torch.no_grad():
        idx, weights = mr.SparseMoe(spec, w).route(torch.from_numpy(x.astype(np.float64)))
    idx, weights = idx.numpy(), weights.numpy()
    y, b, r = mr.moe_bound(spec, w, x, idx, weights, q8_0, operand_rounding)
    return y, b, r, idx, weights


def describe(y, y_ref, b, idx, what):
    ratio = np.abs(y.astype(np.float64) - y_ref) / b
    t, j = np.unravel_index(np.argmax(ratio), ratio.shape)
    return (f"{what}: max |y − ref| / bound = {ratio.max():.3g} at token {t}, output {j}: ffn {y[t, j]!r}, "
            f"reference {y_ref[t, j]!r}, bound {b[t, j]:.3g}; the reference routes token {t} to {sorted(idx[t])}")


# ---------------------------------------------------------------------------------------------
# Python alone: the reference, the bound, the inputs and the writers.

@pytest.mark.parametrize("family", FAMILIES)
def test_reference_restatement_and_its_bound_are_sound(family):
    """The NumPy sum of moe_bound equals the PyTorch module in float64; the same module run
    in f32 (HF's router precision) chooses the same experts, its weights within r and its
    output within the bound — the bound is sound, not tuned to ffn — and the bound is
    small: under 1e-2 of the largest output (it is ~5e-4)."""
    spec = mr.SPECS[family]
    w = mr.random_model(spec, 11)[1]
    x = mr.draw_inputs(spec, w, np.random.default_rng(12), 32)
    y, b, r, idx, weights = reference(spec, w, x)
    with torch.no_grad():
        y64 = mr.SparseMoe(spec, w)(x).numpy()
        m32 = mr.SparseMoe(spec, w, torch.float32)
        idx32, w32 = m32.route(torch.from_numpy(x))
        y32 = m32(torch.from_numpy(x)).double().numpy()
    np.testing.assert_allclose(y, y64, rtol=1e-9, atol=1e-12)
    assert [set(a) for a in idx32.numpy()] == [set(a) for a in idx]
    order = np.argsort(idx, 1), np.argsort(idx32.numpy(), 1)
    wa = np.take_along_axis(weights, order[0], 1)
    wb = np.take_along_axis(w32.double().numpy(), order[1], 1)
    assert np.all(np.abs(wb - wa) <= r[:, None] * np.abs(wa))
    assert np.all(np.abs(y32 - y) <= b), describe(y32, y, b, idx, "PyTorch f32")
    assert b.max() < 1e-2 * np.abs(y).max()


@pytest.mark.parametrize("family,mutation", [(f, m) for f in FAMILIES for m in MUTATIONS[f]])
def test_the_bound_rejects_each_mistake(family, mutation):
    """Each mistake made in the reference lands far outside the bound: the routing weights'
    bound is ~1e-4 relative and the experts' ~1e-5, while a mistake moves some output by
    a few percent or more."""
    spec = mr.SPECS[family]
    w = mr.random_model(spec, 13)[1]
    x = mr.draw_inputs(spec, w, np.random.default_rng(14), TOKENS)
    y, b, _, _, _ = reference(spec, w, x)
    with torch.no_grad():
        y_wrong = mr.SparseMoe(spec, w, mutation=mutation)(x).numpy()
    ratio = (np.abs(y_wrong - y) / b).max()
    assert ratio > MUTATION_MARGIN, f"{family} {mutation}: only {ratio:.3g} of the bound"


@pytest.mark.parametrize("family", FAMILIES)
def test_inputs_are_drawn_away_from_ties(family):
    """draw_inputs clears every token, and selection_gaps flags an exact tie made by moving
    the first rejected expert's score onto the last chosen one (its router row for softmax,
    its correction bias for DeepSeek)."""
    spec = mr.SPECS[family]
    w = mr.random_model(spec, 15)[1]
    x = mr.draw_inputs(spec, w, np.random.default_rng(16), 64)
    assert np.all(mr.selection_gaps(spec, w, x) >= 1.0)
    t = x[:1].astype(np.float64)
    tied = {k: v.copy() for k, v in w.items()}
    if spec.scoring == "softmax":
        logits = (t @ w["router"].T)[0]
        a, b_ = np.argsort(-logits)[spec.k - 1:spec.k + 1]
        tied["router"][b_] += (logits[a] - logits[b_]) * t[0] / (t[0] @ t[0])
    else:
        with torch.no_grad():
            chosen = mr.SparseMoe(spec, w).route(torch.from_numpy(t))[0].numpy()[0]
        choice = 1 / (1 + np.exp(-(t @ w["router"].T)[0])) + w["bias"]
        last = chosen[np.argmin(choice[chosen])]
        rejected = [e for e in np.argsort(-choice) if e not in chosen]
        first = next(e for e in rejected if e // (spec.experts // spec.groups) in
                     {c // (spec.experts // spec.groups) for c in chosen})
        tied["bias"][first] += choice[last] - choice[first]
    assert mr.selection_gaps(spec, tied, t)[0] < 1e-6


def test_gguf_py_has_the_group_keys():
    """gguf-py 0.19.0 names DeepSeek's groups: {arch}.expert_group_count and
    {arch}.expert_group_used_count (Keys.LLM.EXPERT_GROUP_COUNT / EXPERT_GROUP_USED_COUNT)."""
    gguf = gguf_module()
    assert gguf.Keys.LLM.EXPERT_GROUP_COUNT == "{arch}.expert_group_count"
    assert gguf.Keys.LLM.EXPERT_GROUP_USED_COUNT == "{arch}.expert_group_used_count"
    assert gguf.Keys.LLM.EXPERT_GATING_FUNC == "{arch}.expert_gating_func"
    assert gguf.ExpertGatingFuncType.SIGMOID == 2


@pytest.mark.parametrize("family", FAMILIES)
def test_the_gguf_writer_lays_out_llama_cpp_s_names_and_shapes(tmp_path, family):
    """GGUFReader sees the metadata and ggml's shapes (ne, innermost first): ffn_gate_inp
    {D, E}, ffn_{gate,up}_exps {D, H, E}, ffn_down_exps {H, D, E}, ffn_gate_inp_shexp {D},
    exp_probs_b.bias {E}."""
    gguf = gguf_module()
    spec = mr.SPECS[family]
    path = tmp_path / "m.gguf"
    mr.write_gguf(path, spec, mr.random_model(spec, 17))
    reader = gguf.GGUFReader(str(path))
    arch = mr.GGUF_ARCH[family]
    field = lambda key: reader.fields[key].contents()
    assert field("general.architecture") == arch
    assert field(f"{arch}.expert_count") == spec.experts and field(f"{arch}.expert_used_count") == spec.k
    shapes = {t.name: list(map(int, t.shape)) for t in reader.tensors}
    D, H, E = spec.d, spec.hidden, spec.experts
    assert shapes["blk.1.ffn_gate_inp.weight"] == [D, E]
    assert shapes["blk.1.ffn_gate_exps.weight"] == shapes["blk.1.ffn_up_exps.weight"] == [D, H, E]
    assert shapes["blk.1.ffn_down_exps.weight"] == [H, D, E]
    if family == "qwen2_moe":
        assert shapes["blk.1.ffn_gate_inp_shexp.weight"] == [D]
        assert shapes["blk.1.ffn_down_shexp.weight"] == [spec.shared_hidden, D]
        assert field("qwen2moe.expert_shared_feed_forward_length") == spec.shared_hidden
    if family == "deepseek_v3":
        assert shapes["blk.1.exp_probs_b.bias"] == [E]
        assert shapes["blk.0.ffn_gate.weight"] == [D, spec.dense_hidden]
        assert field("deepseek2.expert_gating_func") == 2 and field("deepseek2.leading_dense_block_count") == 1
        assert field("deepseek2.expert_group_count") == 4 and field("deepseek2.expert_group_used_count") == 2
        assert field("deepseek2.expert_weights_norm") is True
        assert abs(field("deepseek2.expert_weights_scale") - 2.5) < 1e-7


def test_the_hf_writers_use_the_hf_names():
    names = {f: set(mr.hf_tensors(mr.SPECS[f], mr.random_model(mr.SPECS[f], 1))) for f in FAMILIES}
    assert {"model.layers.1.block_sparse_moe.gate.weight", "model.layers.1.block_sparse_moe.experts.7.w1.weight",
            "model.layers.1.block_sparse_moe.experts.0.w3.weight",
            "model.layers.1.block_sparse_moe.experts.3.w2.weight"} <= names["mixtral"]
    assert {"model.layers.1.mlp.gate.weight", "model.layers.1.mlp.experts.15.down_proj.weight",
            "model.layers.1.mlp.shared_expert.up_proj.weight",
            "model.layers.1.mlp.shared_expert_gate.weight"} <= names["qwen2_moe"]
    assert {"model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.1.mlp.shared_experts.gate_proj.weight",
            "model.layers.0.mlp.down_proj.weight"} <= names["deepseek_v3"]
    fused = mr.hf_tensors(mr.SPECS["mixtral"], mr.random_model(mr.SPECS["mixtral"], 1), fused=True)
    assert list(fused["model.layers.1.mlp.experts.gate_up_proj"].shape) == [8, 256, 64]
    assert list(fused["model.layers.1.mlp.experts.down_proj"].shape) == [8, 64, 128]
    assert "model.layers.1.mlp.gate.weight" in fused


# ---------------------------------------------------------------------------------------------
# ffn against the reference.

_CASES = {}


def write_case(tmp_path_factory, family, fmt, qtype=None):
    """The checkpoint of (family, format), written once per session: (path, layers as stored)."""
    key = (family, fmt, qtype)
    if key not in _CASES:
        spec = mr.SPECS[family]
        folder = tmp_path_factory.mktemp(f"{family}-{fmt}")
        layers = mr.random_model(spec, 21 + FAMILIES.index(family))
        if fmt == "gguf":
            gguf_module()  # skips where gguf-py is missing
            path = folder / "model.gguf"
            layers = mr.write_gguf(path, spec, layers, qtype)
        elif fmt == "hf":
            mr.write_hf(folder, spec, layers)
            path = folder  # the folder: model.safetensors and config.json
        else:
            path = mr.write_hf(folder, spec, layers, fused=True)  # the file, config.json beside it
        _CASES[key] = (path, layers)
    return _CASES[key]


def run_forward(run_ffn, path, x, tmp, layer=1, args=(), env=None, check=True):
    files.write_npy(tmp / "x.npy", x)
    return run_ffn("forward", "--weights", path, "--layer", layer, "--input", tmp / "x.npy", "--output", tmp / "y.npy",
                   *args, env=env, check=check)


def forward(run_ffn, path, x, tmp, layer=1, args=(), env=None):
    run_forward(run_ffn, path, x, tmp, layer, args, env)
    y = np.load(tmp / "y.npy")
    assert y.shape == x.shape and y.dtype == np.float32
    return y


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("family", FAMILIES)
def test_forward_matches_the_reference(tmp_path_factory, tmp_path, run_ffn, family, fmt):
    spec = mr.SPECS[family]
    path, layers = write_case(tmp_path_factory, family, fmt)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(31), TOKENS)
    y = forward(run_ffn, path, x, tmp_path)
    y_ref, b, _, idx, _ = reference(spec, layers[1], x)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, f"{family} {fmt}")
    # These inputs tell every mistake of MUTATIONS apart (DeepSeek's groups and bias included).
    for mutation in MUTATIONS[family]:
        with torch.no_grad():
            y_wrong = mr.SparseMoe(spec, layers[1], mutation=mutation)(x).numpy()
        assert (np.abs(y_wrong - y_ref) / b).max() > MUTATION_MARGIN, mutation


VARIANTS = {  # the config fields each family may flip (HF per-expert files)
    "qwen2_moe norm_topk_prob": ("qwen2_moe", dict(norm=True)),
    "qwen3_moe no norm_topk_prob": ("qwen3_moe", dict(norm=False)),
    "deepseek_v3 no norm, scale 1, one group": ("deepseek_v3", dict(norm=False, scale=1.0, groups=1, groups_kept=1)),
    "deepseek_v3 8 groups keep 3, k 6": ("deepseek_v3", dict(groups=8, groups_kept=3, k=6)),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_forward_follows_the_config_fields(tmp_path, run_ffn, variant):
    """norm_topk_prob, routed_scaling_factor, n_group / topk_group and num_experts_per_tok
    are read from config.json, not assumed per family."""
    family, changes = VARIANTS[variant]
    spec = mr.dataclasses.replace(mr.SPECS[family], **changes)
    layers = mr.random_model(spec, 51)
    mr.write_hf(tmp_path / "m", spec, layers)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(52), TOKENS)
    y = forward(run_ffn, tmp_path / "m", x, tmp_path)
    y_ref, b, _, idx, _ = reference(spec, layers[1], x)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, variant)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("family", FAMILIES)
def test_forward_is_the_same_for_any_thread_count_and_batch(tmp_path_factory, tmp_path, run_ffn, family, fmt):
    """Bit-identical for --threads 1, 2, 3, and each token of the batch run alone."""
    spec = mr.SPECS[family]
    path, layers = write_case(tmp_path_factory, family, fmt)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(32), 7)
    y1 = forward(run_ffn, path, x, tmp_path, args=("--threads", 1))
    for threads in (2, 3):
        y = forward(run_ffn, path, x, tmp_path, args=("--threads", threads))
        assert np.array_equal(y.view(np.uint32), y1.view(np.uint32)), f"--threads {threads} against --threads 1"
    for t in range(len(x)):
        y = forward(run_ffn, path, x[t:t + 1], tmp_path, args=("--threads", 2))
        assert np.array_equal(y[0].view(np.uint32), y1[t].view(np.uint32)), f"token {t} alone against the batch"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("family", FAMILIES)
def test_python_module_forward_and_route(tmp_path_factory, tmp_path, run_ffn, ffn_module, family, fmt):
    """m.forward(x) is the CLI's output bit for bit; m.route(x) gives int [T, k] experts, the
    reference's set per token, and float32 [T, k] weights (those multiplied into the experts'
    outputs, DeepSeek's routed scaling included, as HF's router returns them) within r."""
    spec = mr.SPECS[family]
    path, layers = write_case(tmp_path_factory, family, fmt)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(33), TOKENS)
    y_cli = forward(run_ffn, path, x, tmp_path)
    m = ffn_module.load(path, layer=1)
    y = m.forward(x)
    assert np.array_equal(np.asarray(y).view(np.uint32), y_cli.view(np.uint32))
    experts, weights = m.route(x)
    experts, weights = np.asarray(experts), np.asarray(weights)
    assert experts.shape == (TOKENS, spec.k) and np.issubdtype(experts.dtype, np.integer)
    assert weights.shape == (TOKENS, spec.k) and weights.dtype == np.float32
    _, _, r, idx, w_ref = reference(spec, layers[1], x)
    # Best first (the README's contract): by weight for softmax; by the (biased, masked)
    # choice score for DeepSeek, up to the reference's f32 error among the chosen.
    if spec.scoring == "softmax":
        assert np.all(np.diff(weights, axis=1) <= 0), weights
    else:
        choice = 1 / (1 + np.exp(-(x.astype(np.float64) @ layers[1]["router"].T))) + layers[1]["bias"]
        ordered = np.take_along_axis(choice, experts.astype(np.int64), 1)
        assert np.all(np.diff(ordered, axis=1) <= 1e-6 * np.abs(ordered[:, 1:])), ordered
    for t in range(TOKENS):
        assert set(experts[t].tolist()) == set(idx[t].tolist()), f"token {t}: ffn {sorted(experts[t])}, ref {sorted(idx[t])}"
        want = dict(zip(idx[t].tolist(), w_ref[t]))
        for e, got in zip(experts[t].tolist(), weights[t].astype(np.float64)):
            assert abs(got - want[e]) <= r[t] * abs(want[e]), f"token {t}, expert {e}: {got!r} against {want[e]!r}"


@pytest.mark.parametrize("family", ["qwen2_moe", "deepseek_v3"])
def test_load_opens_each_file_once(tmp_path, ffn_module, family):
    """ffn.load of a mixture of experts (its leading dense layer too, for DeepSeek) opens
    model.safetensors once and config.json once — which says the activation and the routing
    alike — as the kernel counts opens."""
    spec = mr.SPECS[family]
    layers = mr.random_model(spec, 61)
    weights = mr.write_hf(tmp_path / "m", spec, layers)
    config = tmp_path / "m" / "config.json"
    for layer in (0, 1):
        with opens.counted(weights, config) as count:
            m = ffn_module.load(tmp_path / "m", layer=layer)
        assert count == {weights: 1, config: 1}, f"layer {layer}"
    assert isinstance(m, ffn_module.MoeBlock) and m.experts == spec.experts


@pytest.mark.parametrize("family", ["mixtral", "deepseek_v3"])
def test_a_large_batch_is_each_token_s_answer(tmp_path_factory, tmp_path, run_ffn, family):
    """T = 601: each expert gets tens of tokens (the GEMM path, not the one-token path) and
    the batch spans more than one chunk of 512 tokens; still within the bound, and tokens
    on either side of 512 and at the start give bit for bit their answer in a batch of five."""
    spec = mr.SPECS[family]
    path, layers = write_case(tmp_path_factory, family, "gguf")
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(37), 601)
    y = forward(run_ffn, path, x, tmp_path)
    y_ref, b, _, idx, _ = reference(spec, layers[1], x)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, f"{family} T=601")
    for start in (0, 509, 596):
        y5 = forward(run_ffn, path, x[start:start + 5], tmp_path)
        assert np.array_equal(y5.view(np.uint32), y[start:start + 5].view(np.uint32)), f"tokens {start}…{start + 4}"


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
def test_every_isa_within_the_bound(tmp_path_factory, tmp_path, run_ffn, isa):
    """The router and the experts on each ISA the CPU has (FFN_ISA), Mixtral and DeepSeek."""
    env = skip_unless_cpu_has(isa)
    for family in ("mixtral", "deepseek_v3"):
        spec = mr.SPECS[family]
        path, layers = write_case(tmp_path_factory, family, "hf")
        x = mr.draw_inputs(spec, layers[1], np.random.default_rng(36), TOKENS)
        y = forward(run_ffn, path, x, tmp_path, env=env)
        y_ref, b, _, idx, _ = reference(spec, layers[1], x)
        assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, f"{family} {isa}")


def test_an_exact_tie_goes_to_the_lower_index(tmp_path, ffn_module):
    """The stated tie rule (README): Mixtral's router rows 2 and 5 equal, inputs for which the
    two share ranks k and k + 1 — expert 2 is chosen, 5 is not, in every token."""
    spec = mr.SPECS["mixtral"]
    layers = mr.random_model(spec, 71)
    w = layers[1]
    w["router"][5] = w["router"][2]
    rng = np.random.default_rng(72)
    x = mr._f32(rng, (4000, spec.d), 1.0)
    logits = x @ w["router"].T
    above = (logits > logits[:, 2:3]).sum(1)  # experts strictly above the tied pair
    margin = np.sort(logits, 1)[:, ::-1]
    x = x[(above == spec.k - 1) & (margin[:, spec.k - 2] - margin[:, spec.k - 1] > 1e-3) &
          (margin[:, spec.k] - margin[:, spec.k + 1] > 1e-3)][:TOKENS].astype(np.float32)
    assert len(x) == TOKENS
    mr.write_hf(tmp_path / "m", spec, layers)
    experts, _ = ffn_module.load(tmp_path / "m", layer=1).route(x)
    experts = np.asarray(experts)
    assert np.all((experts == 2).any(1)) and not np.any(experts == 5), experts


def skip_unless_cpu_has(isa):
    needs = {"default": [], "scalar": [], "avx2": ["avx2", "fma"], "avx2_vnni": ["avx2", "fma", "avx_vnni"],
             "avx512": ["avx512f"], "avx512_vnni": ["avx512_vnni"]}[isa]
    if any(f" {flag}" not in open("/proc/cpuinfo").read() for flag in needs):
        pytest.skip(f"this CPU lacks {isa}")
    return {} if isa == "default" else {"FFN_ISA": isa}


@pytest.mark.parametrize("isa", ["default", "scalar", "avx2", "avx2_vnni", "avx512_vnni"])
def test_q8_0_gguf(tmp_path_factory, tmp_path, run_ffn, isa):
    """Mixtral's experts in q8_0 (gguf.quantize; the router f32 as llama.cpp keeps it), on
    each integer kernel the CPU has: the worst-case bound with the q8_0 activation term, and
    the sharp check — relative RMS against the forward that quantises x and h to q8_0 as
    ggml does. 3e-3 leaves room for a few codes that f32 rounding moves across a rounding
    boundary (~1e-3 each, as in test_kquant_files.py); the activations' quantisation itself
    is ~1e-2 and a wrong routing or layout ~1."""
    gguf = gguf_module()
    env = skip_unless_cpu_has(isa)
    spec = mr.SPECS["mixtral"]
    path, layers = write_case(tmp_path_factory, "mixtral", "gguf", gguf.GGMLQuantizationType.Q8_0)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(34), TOKENS)
    y = forward(run_ffn, path, x, tmp_path, env=env)
    y_ref, b, _, idx, weights = reference(spec, layers[1], x, q8_0=True)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, "mixtral q8_0")
    y8 = mr.quantised_forward(spec, layers[1], x, idx, weights)
    rel = np.sqrt(np.mean((y - y8) ** 2) / np.mean(y8**2))
    assert rel <= 3e-3, f"{rel:.3g} off the emulated q8_0 forward"
    assert np.sqrt(np.mean((y_ref - y8) ** 2) / np.mean(y8**2)) > 3 * 3e-3  # the check sees the quantisation


@pytest.mark.parametrize("family", ["qwen2_moe", "deepseek_v3"])
def test_bf16_checkpoint(tmp_path, run_ffn, family):
    """Every tensor in bf16, as HF releases these models: the router widened exactly to f32
    (the routing must still be the f32 reference's: the tie margins are far below bf16's
    2**-8, so a router run on bf16-rounded activations would show), the experts run as
    stored — on avx512_bf16 dotted with bf16 activations (the bound with their rounding,
    2**-8 of each term), elsewhere widened exactly (the f32 bound)."""
    spec = mr.SPECS[family]
    to_bf16 = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float32)).to(torch.bfloat16)
    layers = [{k: (v if k == "dense" else to_bf16(v).double().numpy()) for k, v in w.items()}
              for w in mr.random_model(spec, 81)]
    tensors = {k: v.to(torch.bfloat16) for k, v in mr.hf_tensors(spec, layers).items()}
    mr.write_hf(tmp_path / "m", spec, layers, tensors=tensors)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(82), TOKENS)
    y = forward(run_ffn, tmp_path / "m", x, tmp_path)
    bf16_dot = " avx512_bf16" in open("/proc/cpuinfo").read()
    y_ref, b, _, idx, _ = reference(spec, layers[1], x, operand_rounding=2.0**-8 if bf16_dot else 0.0)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, f"{family} bf16")


def test_k_quant_experts(tmp_path, run_ffn, ffn_module):
    """Mixtral at D = H = 256 with its experts in the Q4_K_M rule's types (q4_K gate and up,
    q6_K down: ffn.quantize writes ggml's reference bytes, gguf-py dequantises them for the
    reference): the worst-case bound with the q8_K activation term (blocks of 256), and the
    sharp check against the forward that quantises x and h to q8_K as ggml does
    (test_kquant_files.q8_k_values), within test_kquant_files.EMULATED_ERROR."""
    gguf = gguf_module()
    import test_kquant_files as kq

    spec = mr.dataclasses.replace(mr.SPECS["mixtral"], d=256, hidden=256)
    types = {"gate": "q4_K", "up": "q4_K", "down": "q6_K"}
    quantiser = lambda a, m: (ffn_module.quantize(a, types[m].lower()), gguf.GGMLQuantizationType[types[m].upper()])
    layers = mr.write_gguf(tmp_path / "m.gguf", spec, mr.random_model(spec, 61), quantiser=quantiser)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(62), TOKENS)
    y = forward(run_ffn, tmp_path / "m.gguf", x, tmp_path)
    y_ref, b, _, idx, weights = reference(spec, layers[1], x, q8_0=(256, 256))
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), describe(y, y_ref, b, idx, "mixtral q4_K/q6_K")
    y8 = mr.quantised_forward(spec, layers[1], x, idx, weights, kq.q8_k_values)
    rel = np.sqrt(np.mean((y - y8) ** 2) / np.mean(y8**2))
    assert rel <= kq.EMULATED_ERROR, f"{rel:.3g} off the emulated q8_K forward"
    assert np.sqrt(np.mean((y_ref - y8) ** 2) / np.mean(y8**2)) > 3 * kq.EMULATED_ERROR


@pytest.mark.parametrize("fmt", FORMATS)
def test_deepseek_dense_layer_0(tmp_path_factory, tmp_path, run_ffn, fmt):
    """first_k_dense_replace = 1 (GGUF: leading_dense_block_count): layer 0 is a dense
    SwiGLU of intermediate_size, within the dense bound."""
    spec = mr.SPECS["deepseek_v3"]
    path, layers = write_case(tmp_path_factory, "deepseek_v3", fmt)
    x = np.random.default_rng(35).standard_normal((TOKENS, spec.d)).astype(np.float32)
    y = forward(run_ffn, path, x, tmp_path, layer=0)
    y_ref, b = mr.dense_bound(layers[0], x)
    np.testing.assert_allclose(y_ref, mr.dense_forward(layers[0], x), rtol=1e-9, atol=1e-12)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), float((np.abs(y - y_ref) / b).max())


# The presets' shapes, from each model's config.json: D, H, E, k, shared hidden, shared gate.
PRESETS = {
    "mixtral-8x7b": (4096, 14336, 8, 2, 0, False),
    "mixtral-8x22b": (6144, 16384, 8, 2, 0, False),
    "qwen1.5-moe-a2.7b": (2048, 1408, 60, 4, 5632, True),
    "qwen3-30b-a3b": (2048, 768, 128, 8, 0, False),
    "qwen3-235b-a22b": (4096, 1536, 128, 8, 0, False),
}


@pytest.mark.parametrize("preset", list(PRESETS))
def test_info_preset_parameters(run_ffn, preset):
    """Per layer: total = E experts × 3·D·H + the router E·D (+ a shared expert 3·D·Hs and
    its gate D); active = k experts + the router (+ the shared expert and gate). For
    Mixtral 8x7B: 8 × 3 × 4096 × 14336 + 8 × 4096 and 2 experts + the router. (DeepSeek-V3
    is left out: whether e_score_correction_bias counts is a convention — HF registers it
    as a buffer, not a parameter.)"""
    D, H, E, k, Hs, gate = PRESETS[preset]
    fixed = E * D + 3 * D * Hs + (D if gate else 0)
    total, active = E * 3 * D * H + fixed, k * 3 * D * H + fixed
    if preset == "mixtral-8x7b":
        assert (total, active) == (1_409_318_912, 352_354_304)
    out = run_ffn("info", "--preset", preset).stdout
    numbers = {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", out)}
    assert total in numbers and active in numbers, out
    assert "total" in out.lower() and "active" in out.lower(), out
    if preset == "mixtral-8x7b":  # the expected distinct experts a batch touches: E·(1 − (1 − k/E)^T)
        rows = {int(t): float(e) for t, e in re.findall(r"^\s*(\d+)\s+(\d+\.\d+)\s", out, re.M)}
        assert {1, 2, 4, 8, 64} <= set(rows), out
        for T, experts in rows.items():
            assert abs(experts - E * (1 - (1 - k / E) ** T)) <= 0.005 + 1e-9, (T, experts)


# ---------------------------------------------------------------------------------------------
# Hostile files: each a non-zero exit and a message naming the field or tensor.

def hostile_mixtral(folder, change):
    spec = mr.SPECS["mixtral"]
    layers = mr.random_model(spec, 41)
    config = mr.hf_config(spec)
    tensors = mr.hf_tensors(spec, layers)
    p = "model.layers.1.block_sparse_moe."
    if change == "k_above_experts":
        config["num_experts_per_tok"] = spec.experts + 1
    elif change == "config_count":
        config["num_local_experts"] = spec.experts + 2
    elif change == "missing_expert":
        del tensors[p + "experts.3.w3.weight"]
    elif change == "unequal_expert":
        for name, shape in (("w1", (64, spec.d)), ("w3", (64, spec.d)), ("w2", (spec.d, 64))):
            tensors[p + f"experts.5.{name}.weight"] = torch.randn(shape)
    elif change == "router_width":
        tensors[p + "gate.weight"] = torch.randn(spec.experts, spec.d + 1)
    mr.write_hf(folder, spec, layers, config=config, tensors=tensors)
    return folder


HOSTILE = {  # change → names the message may give (any one)
    "k_above_experts": ["num_experts_per_tok"],
    "config_count": ["num_local_experts", "experts.8."],
    "missing_expert": ["experts.3.w3.weight"],
    "unequal_expert": ["experts.5."],
    "router_width": ["block_sparse_moe.gate.weight"],
}


def fails_naming(p, names):
    return p.returncode != 0 and any(n in p.stderr for n in names)


@pytest.mark.parametrize("change", list(HOSTILE))
def test_hostile_hf_checkpoints(tmp_path, run_ffn, ffn_module, change):
    """ffn forward and ffn.load alike."""
    folder = hostile_mixtral(tmp_path / "m", change)
    p = run_forward(run_ffn, folder, np.ones((2, mr.SPECS["mixtral"].d)), tmp_path, check=False)
    assert fails_naming(p, HOSTILE[change]), (p.returncode, p.stderr)
    with pytest.raises(ffn_module.Error) as e:
        ffn_module.load(folder, layer=1)
    assert any(n in str(e.value) for n in HOSTILE[change]), str(e.value)


@pytest.mark.parametrize("change", ["expert_count", "missing_tensor"])
def test_hostile_gguf(tmp_path, run_ffn, change):
    """GGUF: expert_count metadata that the tensors contradict; a missing expert tensor."""
    gguf = gguf_module()
    spec = mr.SPECS["qwen3_moe"]
    layers = mr.random_model(spec, 42)
    path = tmp_path / "m.gguf"
    if change == "expert_count":  # metadata says E + 4; the router and the expert tensors hold E
        mr.write_gguf(path, mr.dataclasses.replace(spec, experts=spec.experts + 4), layers)
        assert gguf.GGUFReader(str(path)).fields["qwen3moe.expert_count"].contents() == spec.experts + 4
        names = ["expert_count", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"]
    else:
        mr.write_gguf(path, spec, layers, drop=("blk.1.ffn_down_exps.weight",))
        names = ["blk.1.ffn_down_exps.weight"]
    p = run_forward(run_ffn, path, np.ones((2, spec.d)), tmp_path, check=False)
    assert fails_naming(p, names), (p.returncode, p.stderr)


def test_nan_input_is_an_error(tmp_path_factory, tmp_path, run_ffn, ffn_module):
    spec = mr.SPECS["mixtral"]
    path, layers = write_case(tmp_path_factory, "mixtral", "hf")
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(43), 3)
    x[1, 5] = np.nan
    p = run_forward(run_ffn, path, x, tmp_path, check=False)
    assert p.returncode != 0 and ("router" in p.stderr.lower() or "not finite" in p.stderr.lower()), p.stderr
    m = ffn_module.load(path, layer=1)
    for call in (m.forward, m.route):
        with pytest.raises(ffn_module.Error, match="(?i)router|not finite"):
            call(x)
