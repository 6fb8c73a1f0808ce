"""The mixture-of-experts families of issue 35 beyond those of test_moe.py: GLM-4.5 MoE,
OLMoE, DBRX, Granite-MoE (and Granite-MoE-Shared), DeepSeek-V2 and Llama 4, each a tiny
checkpoint in its own Hugging Face names and config.json keys (as save_pretrained writes
them; DBRX sharded; Llama 4 also as Llama4ForConditionalGeneration's) and, for OLMoE, DBRX,
Granite-MoE, GLM-4.5, DeepSeek-V2 and Llama 4, in GGUF as llama.cpp's converter writes it
(gguf-py), run through `ffn forward --layer 1` and `ffn.load(path, layer=1)` with no flags,
against the family's module restated in moe_reference.py (the classes are named there:
OlmoeSparseMoeBlock, DbrxFFN, GraniteMoeMoE, Glm4MoeMoE, DeepseekV2MoE, Llama4TextMoe).
Llama 4's routing weight multiplies the expert's input (MoeConfig::weight_input): its bound
adds the input's perturbation through the expert (moe_reference._weighted_input_bound).

Tolerance: moe_reference.moe_bound element by element (test_moe.py's f32 contract: the
dense f32 bound of every chosen and shared expert, the routing weights' f32 error, the sum's
rounding; ~5e-4 of the largest output). Every family's mistakes (MUTATIONS, among them the
halves of a fused gate_up swapped and each routing rule's variants) exceed it > 100×, and
wrong-layout twin checkpoints written to disk are shown to fail by that much.
"""
import json

import numpy as np
import pytest
import torch

import files
import moe_reference as mr
import test_moe as tm

FAMILIES = ["olmoe", "dbrx", "granitemoe", "granitemoeshared", "glm4_moe", "deepseek_v2", "llama4"]
FORMATS = {  # gguf only where llama.cpp's converter keeps the module's semantics (DeepSeek-V2: below)
    "olmoe": ["hf", "hf_fused", "gguf"],
    "dbrx": ["hf_sharded", "gguf"],
    "granitemoe": ["hf", "gguf"],
    "granitemoeshared": ["hf", "gguf"],
    "glm4_moe": ["hf", "gguf"],
    "deepseek_v2": ["hf", "hf_fused"],
    "llama4": ["hf", "hf_multimodal", "gguf"],
}
MUTATIONS = {
    "olmoe": ["wrong_expert", "renorm", "sign", "swapped_gate_up"],
    "dbrx": ["wrong_expert", "no_renorm", "sign", "swapped_gate_up"],
    "granitemoe": ["wrong_expert", "no_renorm", "sign", "swapped_gate_up"],
    "granitemoeshared": ["wrong_expert", "no_renorm", "no_shared", "swapped_gate_up", "swapped_shared_gate_up"],
    "glm4_moe": ["wrong_expert", "no_renorm", "no_scale", "no_shared", "bias_in_weights", "no_bias",
                 "swapped_gate_up"],
    "deepseek_v2": ["wrong_expert", "renorm", "no_scale", "no_shared", "no_groups", "top2_groups", "swapped_gate_up"],
    "llama4": ["wrong_expert", "output_scaled", "no_shared", "swapped_gate_up", "swapped_shared_gate_up"],
}
TOKENS = tm.TOKENS
MARGIN = tm.MUTATION_MARGIN


@pytest.mark.parametrize("family", FAMILIES)
def test_reference_restatement_and_its_bound_are_sound(family):
    tm.test_reference_restatement_and_its_bound_are_sound(family)


@pytest.mark.parametrize("family,mutation", [(f, m) for f in FAMILIES for m in MUTATIONS[f]])
def test_the_bound_rejects_each_mistake(family, mutation):
    tm.test_the_bound_rejects_each_mistake(family, mutation)


def write_sharded(folder, spec, layers):
    """save_pretrained's sharded form: two model-0000N-of-00002.safetensors files, each layer
    in one of them, and model.safetensors.index.json's weight_map."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = mr.hf_tensors(spec, layers)
    shards = [{}, {}]
    for name, t in tensors.items():
        shards[0 if ".0." in name else 1][name] = t
    weight_map = {}
    for i, shard in enumerate(shards):
        file = f"model-0000{i + 1}-of-00002.safetensors"
        files.write_safetensors(folder / file, shard)
        weight_map.update({name: file for name in shard})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps(mr.hf_config(spec, len(layers))))
    return folder / "model.safetensors.index.json"


_CASES = {}


def write_case(tmp_path_factory, family, fmt):
    key = (family, fmt)
    if key not in _CASES:
        spec = mr.SPECS[family]
        folder = tmp_path_factory.mktemp(f"{family}-{fmt}")
        layers = mr.random_model(spec, 121 + FAMILIES.index(family))
        if fmt == "gguf":
            tm.gguf_module()
            path = folder / "model.gguf"
            layers = mr.write_gguf(path, spec, layers)
        elif fmt == "hf_sharded":
            path = write_sharded(folder, spec, layers)
        elif fmt == "hf_multimodal":  # Llama4ForConditionalGeneration: language_model.model.…, text_config
            t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
            config = {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
                      "text_config": mr.hf_config(spec), "vision_config": {"hidden_size": 32}}
            mr.write_hf(folder, spec, layers, config=config,
                        tensors=mr.llama4_tensors(spec, layers, t, prefix="language_model.model."))
            path = folder
        elif fmt == "hf":
            mr.write_hf(folder, spec, layers)
            path = folder
        else:
            path = mr.write_hf(folder, spec, layers, fused=True)
        _CASES[key] = (path, layers)
    return _CASES[key]


def check_within(y, spec, w, x, what):
    y_ref, b, _, idx, _ = tm.reference(spec, w, x)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b), tm.describe(y, y_ref, b, idx, what)
    return y_ref, b


@pytest.mark.parametrize("family,fmt", [(f, fmt) for f in FAMILIES for fmt in FORMATS[f]])
def test_forward_and_load_match_the_module(tmp_path_factory, tmp_path, run_ffn, ffn_module, family, fmt):
    """`ffn forward` within the bound of the family's module; ffn.load's forward the CLI's
    bit for bit and its routing the module's experts; every mistake of MUTATIONS > 100× the
    bound on these inputs."""
    spec = mr.SPECS[family]
    path, layers = write_case(tmp_path_factory, family, fmt)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(131), TOKENS)
    y = tm.forward(run_ffn, path, x, tmp_path)
    y_ref, b = check_within(y, spec, layers[1], x, f"{family} {fmt}")
    m = ffn_module.load(path, layer=1)
    assert m.weight_input == (family in mr.WEIGHT_INPUT) and m.experts == spec.experts and m.top_k == spec.k
    assert np.array_equal(np.asarray(m.forward(x)).view(np.uint32), y.view(np.uint32))
    experts = np.asarray(m.route(x)[0])
    _, _, _, idx, _ = tm.reference(spec, layers[1], x)
    assert [set(e) for e in experts.tolist()] == [set(i) for i in idx.tolist()]
    for mutation in MUTATIONS[family]:
        with torch.no_grad():
            y_wrong = mr.SparseMoe(spec, layers[1], mutation=mutation)(x).numpy()
        assert (np.abs(y_wrong - y_ref) / b).max() > MARGIN, mutation


@pytest.mark.parametrize("fmt", ["hf"])  # GGUF: the dense layer's activation needs glm4moe in activation_hint.cpp
def test_leading_dense_layer(tmp_path_factory, tmp_path, run_ffn, fmt):
    """GLM-4.5's first_k_dense_replace = 1: layer 0 is a dense SwiGLU of intermediate_size,
    within the dense bound."""
    spec = mr.SPECS["glm4_moe"]
    path, layers = write_case(tmp_path_factory, "glm4_moe", fmt)
    x = np.random.default_rng(132).standard_normal((TOKENS, spec.d)).astype(np.float32)
    y = tm.forward(run_ffn, path, x, tmp_path, layer=0)
    y_ref, b = mr.dense_bound(layers[0], x)
    assert np.all(np.abs(y.astype(np.float64) - y_ref) <= b)


def run_against(run_ffn, tmp_path, path, spec, w, x):
    """ffn's output over the bound of `spec`'s module: (max ratio)."""
    y = tm.forward(run_ffn, path, x, tmp_path)
    y_ref, b, _, _, _ = tm.reference(spec, w, x)
    return (np.abs(y.astype(np.float64) - y_ref) / b).max()


def test_olmoe_does_not_renormalise(tmp_path, run_ffn):
    """OLMoE's config.json says norm_topk_prob false (OlmoeConfig's default, which
    OLMoE-1B-7B keeps): ffn follows it — within the bound of the module — and a checkpoint
    whose config leaves norm_topk_prob out is read with the same default; the renormalised
    module (Qwen3-MoE's rule) is > 100× the bound away."""
    spec = mr.SPECS["olmoe"]
    layers = mr.random_model(spec, 141)
    config = mr.hf_config(spec)
    del config["norm_topk_prob"]
    mr.write_hf(tmp_path / "m", spec, layers, config=config)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(142), TOKENS)
    assert run_against(run_ffn, tmp_path, tmp_path / "m", spec, layers[1], x) <= 1
    renormalised = mr.dataclasses.replace(spec, norm=True)
    assert run_against(run_ffn, tmp_path, tmp_path / "m", renormalised, layers[1], x) > MARGIN


def test_qwen3_moe_renormalises_as_its_config_says(tmp_path, run_ffn):
    """Qwen3-MoE's released configs say norm_topk_prob true (Qwen3MoeSparseMoeBlock then
    renormalises): ffn within the bound of that module, > 100× away from the unrenormalised."""
    spec = mr.SPECS["qwen3_moe"]
    assert spec.norm
    layers = mr.random_model(spec, 143)
    mr.write_hf(tmp_path / "m", spec, layers)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(144), TOKENS)
    assert run_against(run_ffn, tmp_path, tmp_path / "m", spec, layers[1], x) <= 1
    assert run_against(run_ffn, tmp_path, tmp_path / "m", mr.dataclasses.replace(spec, norm=False), layers[1], x) > MARGIN


def halves_swapped_ratio(tmp_path, run_ffn, family, seed, tensors_of):
    """max |ffn − module| / bound for a checkpoint of `family` whose fused gate and up halves
    are swapped (tensors_of(spec, layers, to_torch, swap_halves=True) writes its tensors)."""
    spec = mr.SPECS[family]
    layers = mr.random_model(spec, seed)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    mr.write_hf(tmp_path / family, spec, layers, tensors=tensors_of(spec, layers, t, swap_halves=True))
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(seed + 1), TOKENS)
    return run_against(run_ffn, tmp_path, tmp_path / family, spec, layers[1], x)


def test_wrong_layout_twins_fail_by_far(tmp_path, run_ffn):
    """Checkpoints written the wrong way, run through ffn as if right, land > 100× outside
    the module's bound: Granite-MoE-Shared's input_linear halves (experts and shared MLP)
    swapped; DBRX's w2 stored without its transposition (nn.Linear rows reshaped)."""
    assert halves_swapped_ratio(tmp_path, run_ffn, "granitemoeshared", 151, mr._granite_tensors) > MARGIN

    spec = mr.SPECS["dbrx"]
    layers = mr.random_model(spec, 153)
    tensors = mr.hf_tensors(spec, layers)
    for n in (0, 1):
        w2 = np.ascontiguousarray(layers[n]["down"].reshape(-1, spec.d), dtype=np.float32)
        tensors[f"transformer.blocks.{n}.ffn.experts.mlp.w2"] = torch.from_numpy(w2)
    mr.write_hf(tmp_path / "d", spec, layers, tensors=tensors)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(154), TOKENS)
    assert run_against(run_ffn, tmp_path, tmp_path / "d", spec, layers[1], x) > MARGIN


VARIANTS = {  # config fields each family may flip
    "dbrx moe_normalize_expert_weights null": ("dbrx", dict(norm=False)),
    "deepseek_v2 greedy (V2-Lite)": ("deepseek_v2", dict(groups=1, groups_kept=1, scale=1.0)),
    "deepseek_v2 'gready' (DeepSeek's spelling)": ("deepseek_v2", dict(groups=1, groups_kept=1)),
    "deepseek_v2 8 groups keep 3, k 6": ("deepseek_v2", dict(groups=8, groups_kept=3, k=6)),
    "glm4_moe 4 groups keep 2, no norm": ("glm4_moe", dict(groups=4, groups_kept=2, norm=False)),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_forward_follows_the_config_fields(tmp_path, run_ffn, variant):
    family, changes = VARIANTS[variant]
    spec = mr.dataclasses.replace(mr.SPECS[family], **changes)
    layers = mr.random_model(spec, 161)
    config = mr.hf_config(spec)
    if family == "dbrx":
        config["ffn_config"]["moe_normalize_expert_weights"] = None
    if "gready" in variant:
        config["topk_method"] = "gready"
    mr.write_hf(tmp_path / "m", spec, layers, config=config)
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(162), TOKENS)
    assert run_against(run_ffn, tmp_path, tmp_path / "m", spec, layers[1], x) <= 1, variant


def test_deepseek_v2_gguf_is_llama_cpp_s_greedy_choice(tmp_path, run_ffn):
    """llama.cpp's converter writes DeepSeek-V2 as deepseek2 with expert_weights_scale and no
    gating func, norm or groups: the greedy routing of V2-Lite (topk_method greedy), which
    ffn runs within the bound of DeepseekV2MoE with that config."""
    tm.gguf_module()
    spec = mr.dataclasses.replace(mr.SPECS["deepseek_v2"], groups=1, groups_kept=1)
    layers = mr.write_gguf(tmp_path / "m.gguf", spec, mr.random_model(spec, 171))
    x = mr.draw_inputs(spec, layers[1], np.random.default_rng(172), TOKENS)
    assert run_against(run_ffn, tmp_path, tmp_path / "m.gguf", spec, layers[1], x) <= 1
    with torch.no_grad():  # the scale is read: without it, far off
        y_ref, b, _, _, _ = tm.reference(spec, layers[1], x)
        y_wrong = mr.SparseMoe(spec, layers[1], mutation="no_scale")(x).numpy()
    assert (np.abs(y_wrong - y_ref) / b).max() > MARGIN


# ---------------------------------------------------------------------------------------------
# Llama 4: the routing weight on the expert's input.

class Llama4TextMoe(torch.nn.Module):
    """transformers' Llama4TextMoe restated on its own (not through moe_reference.SparseMoe):
    router logits = x·W_rᵀ; the top-k logits kept, the others −inf; scores = sigmoid of those
    (0 for the others); every expert e runs on x·score_e and the outputs are summed, with
    experts.gate_up_proj [E, D, 2H] in × out (chunk(2, dim=-1): gate, up) and down_proj
    [E, H, D]; plus the shared expert (Llama4TextMLP) on x."""

    def __init__(self, tensors, prefix="model.layers.1.feed_forward."):
        super().__init__()
        self.t = {n[len(prefix):]: v.double() for n, v in tensors.items() if n.startswith(prefix)}

    def forward(self, x, k):
        t = self.t
        logits = x @ t["router.weight"].T
        top, idx = torch.topk(logits, k, dim=1)
        scores = torch.sigmoid(torch.full_like(logits, float("-inf")).scatter_(1, idx, top))  # [T, E]
        routed_in = x.repeat(logits.shape[1], 1) * scores.T.reshape(-1, 1)  # [E·T, D]: expert-major
        gate_up = torch.bmm(routed_in.view(logits.shape[1], -1, x.shape[1]), t["experts.gate_up_proj"])
        gate, up = gate_up.chunk(2, dim=-1)
        routed_out = torch.bmm(up * torch.nn.functional.silu(gate), t["experts.down_proj"])
        shared = (torch.nn.functional.silu(x @ t["shared_expert.gate_proj.weight"].T) *
                  (x @ t["shared_expert.up_proj.weight"].T)) @ t["shared_expert.down_proj.weight"].T
        return shared + routed_out.sum(0)


def test_llama4_restatements_agree():
    """The two restatements (SparseMoe's Llama 4 path, used for the bound, and the module's
    own batched form above, reading the tensors as written) agree in float64; applying the
    weight to the expert's output instead (what every other family does) is > 100× the
    bound away."""
    spec = mr.SPECS["llama4"]
    w = mr.random_model(spec, 181)[1]
    x = mr.draw_inputs(spec, w, np.random.default_rng(182), TOKENS)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    tensors = mr.llama4_tensors(spec, [w, w], t)
    with torch.no_grad():
        y_module = Llama4TextMoe(tensors)(torch.from_numpy(x.astype(np.float64)), spec.k).numpy()
    y_ref, b, _, _, _ = tm.reference(spec, w, x)
    np.testing.assert_allclose(y_module, y_ref, rtol=1e-9, atol=1e-12)
    with torch.no_grad():
        y_out = mr.SparseMoe(spec, w, mutation="output_scaled")(x).numpy()
    assert (np.abs(y_out - y_ref) / b).max() > MARGIN


def test_llama4_halves_swapped_fail_by_far(tmp_path, run_ffn):
    """A Llama 4 checkpoint whose gate_up_proj has up first, run as if right."""
    assert halves_swapped_ratio(tmp_path, run_ffn, "llama4", 185, mr.llama4_tensors) > MARGIN


# ---------------------------------------------------------------------------------------------
# Configurations ffn refuses rather than guess.

def refused(tmp_path, run_ffn, family, edit, names):
    spec = mr.SPECS[family]
    config = mr.hf_config(spec)
    edit(config)
    mr.write_hf(tmp_path / "m", spec, mr.random_model(spec, 191), config=config)
    p = tm.run_forward(run_ffn, tmp_path / "m", np.ones((2, spec.d), np.float32), tmp_path, check=False)
    assert p.returncode != 0 and all(n in p.stderr for n in names), p.stderr


def test_dbrx_p_norm_other_than_1_is_refused(tmp_path, run_ffn):
    refused(tmp_path, run_ffn, "dbrx", lambda c: c["ffn_config"].update(moe_normalize_expert_weights=2.0),
            ["moe_normalize_expert_weights", "2.0"])


def test_deepseek_v2_norm_topk_prob_true_is_refused(tmp_path, run_ffn):
    """transformers' DeepseekV2MoEGate ignores norm_topk_prob; DeepSeek's own code
    renormalises (and drops the scaling) — the two disagree, so ffn says so."""
    refused(tmp_path, run_ffn, "deepseek_v2", lambda c: c.update(norm_topk_prob=True), ["deepseek_v2", "norm_topk_prob"])


def test_gguf_softmax_groups_are_refused(tmp_path, run_ffn):
    """A deepseek2 GGUF with softmax gating and expert_group_count > 1: llama.cpp scores a
    group by its two best, DeepSeek-V2 by its best — refused, naming the key."""
    gguf = tm.gguf_module()
    spec = mr.SPECS["deepseek_v3"]
    path = tmp_path / "m.gguf"
    mr.write_gguf(path, spec, mr.random_model(spec, 192))
    # Rewrite with softmax gating: the writer's DeepSeek-V3 metadata, gating 1.
    reader = gguf.GGUFReader(str(path))
    assert reader.fields["deepseek2.expert_group_count"].contents() == spec.groups
    wr = gguf.GGUFWriter(str(tmp_path / "s.gguf"), "deepseek2")
    for f in reader.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        value = 1 if f.name == "deepseek2.expert_gating_func" else f.contents()
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            wr.add_array(f.name, value)
        else:
            wr.add_key_value(f.name, value, vtype)
    for t in reader.tensors:
        wr.add_tensor(t.name, np.asarray(t.data).reshape([int(n) for n in reversed(t.shape)]))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    p = tm.run_forward(run_ffn, tmp_path / "s.gguf", np.ones((2, spec.d), np.float32), tmp_path, check=False)
    assert p.returncode != 0 and "expert_group_count" in p.stderr and "softmax" in p.stderr, p.stderr


DBRX_HOSTILE = {  # edit of config.json → what the message names
    "expert count not dividing w1's rows": (lambda c: c["ffn_config"].update(moe_num_experts=5),
                                            ["experts.mlp.w1", "moe_num_experts", "5"]),
    "expert count against ffn_hidden_size": (lambda c: c["ffn_config"].update(moe_num_experts=8),
                                             ["expert hidden size", "96", "192"]),
    "no ffn_config": (lambda c: c.pop("ffn_config"), ["dbrx", "ffn_config"]),
    "an activation other than silu": (lambda c: c["ffn_config"].update(ffn_act_fn={"name": "gelu"}),
                                      ["ffn_act_fn", "gelu"]),
}


@pytest.mark.parametrize("case", list(DBRX_HOSTILE))
def test_dbrx_hostile_configs(tmp_path, run_ffn, case):
    """DBRX's experts are stacked 2-D tensors whose expert count only config.json gives:
    counts that contradict the tensors, a missing ffn_config, an activation ffn does not
    read there — each an error naming the field."""
    edit, names = DBRX_HOSTILE[case]
    refused(tmp_path, run_ffn, "dbrx", edit, names)
