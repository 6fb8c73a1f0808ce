"""gpt-oss's mixture of experts against PyTorch: Hugging Face's GptOssMLP restated (not
copied) — a router with bias, the top k logits, softmax over those k; experts with biases
whose gate_up_proj is stored [E, D, 2H] (in × out) with gate and up interleaved (gate at
even columns), down_proj [E, H, D]; each expert's clamped activation (gate clamped above at
7, up to ±7, (up + 1)·gate·σ(1.702·gate)). Checkpoints in the Hugging Face layout (with
config.json) and in GGUF names (arch gpt-oss, through gguf-py) run through `ffn forward` and
`ffn.load`; the answer must lie within the f32 bound derived below, the routing must be the
reference's (inputs drawn away from near-ties), and the outputs bit-identical across
thread counts and batches. The release's own MXFP4 form (experts as U8 _blocks and
_scales) is tested from its section below: repacked into mxfp4, against transformers'
dequantisation restated, the GGUF of the same blocks and gguf-py.

Bound per token: y = Σ_j w_j·y_j over the k chosen experts. Each expert's f32 error is
bound.forward_and_bound's (the clamps are 1-Lipschitz, their terms in bound.py). A logit's
error is δℓ ≤ (D + 1)·u·(Σ|x·w_r| + |b|); a softmax over k logits moves each weight by a
relative ≤ 2·max δℓ (to first order; the difference of two logits moves by ≤ 2·max δℓ)
plus EVAL_ULPS·u for the exp, the sum and the division. So |ŷ − y| ≤ Σ_j (w_j·b_j +
Δw_j·(|y_j| + b_j)) + (k + 1)·u·Σ_j |w_j·y_j|. A missing +1, missing clamps, a wrong
interleave (gate/up swapped) or softmax over all E instead of the chosen k exceed it by
orders of magnitude (checked in test_bound_rejects_the_usual_mistakes).
"""
import json

import numpy as np
import pytest
import torch

import bound
import files

U = bound.U
EVAL_ULPS = 16
D, H, E, K = 64, 96, 8, 3


def make_layer(seed=0):
    g = torch.Generator().manual_seed(seed)

    def uniform(*shape, scale):
        return ((torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1) * scale).float()

    # Gate and up weights 15× nn.Linear's scale so that a good share of the gates exceed 7
    # and of the ups ±7 at x in ±1: the clamps are engaged.
    return {
        "router": uniform(E, D, scale=1.0 / D**0.5),
        "router_bias": uniform(E, scale=0.5),
        "gate_up": uniform(E, D, 2 * H, scale=15.0 / D**0.5),
        "gate_up_bias": uniform(E, 2 * H, scale=2.0),
        "down": uniform(E, H, D, scale=1.0 / H**0.5),
        "down_bias": uniform(E, D, scale=0.2),
    }


def expert_state(w, e):
    """Expert e in nn.Linear layout, float64 (gate at even columns of gate_up)."""
    gu, b = w["gate_up"][e].double(), w["gate_up_bias"][e].double()
    return {"gate.weight": gu[:, 0::2].T.numpy(), "up.weight": gu[:, 1::2].T.numpy(),
            "down.weight": w["down"][e].double().T.numpy(), "gate.bias": b[0::2].numpy(),
            "up.bias": b[1::2].numpy(), "down.bias": w["down_bias"][e].double().numpy()}


def route(w, x, k=K, softmax_over_all=False):
    logits = x @ w["router"].double().T.numpy() + w["router_bias"].double().numpy()
    chosen = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(logits, chosen, axis=1)
    if softmax_over_all:
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        weights = np.take_along_axis(p / p.sum(axis=1, keepdims=True), chosen, axis=1)
    else:
        p = np.exp(top - top[:, :1])
        weights = p / p.sum(axis=1, keepdims=True)
    return logits, chosen, weights


def expert_forward(state, x, clamp=True, shift=1.0, swap=False):
    gate = x @ state["gate.weight"].T + state["gate.bias"]
    up = x @ state["up.weight"].T + state["up.bias"]
    if swap:
        gate, up = up, gate
    if clamp:
        gate, up = np.minimum(gate, 7.0), np.clip(up, -7.0, 7.0)
    return ((up + shift) * gate / (1 + np.exp(-1.702 * gate))) @ state["down.weight"].T + state["down.bias"]


def reference(w, x, **mistake):
    """y [T, D] in float64, and its f32 bound."""
    over_all = mistake.pop("softmax_over_all", False)
    logits, chosen, weights = route(w, x, softmax_over_all=over_all)
    abs_logit = np.abs(x) @ np.abs(w["router"].double().T.numpy()) + np.abs(w["router_bias"].double().numpy())
    dl = (D + 1) * U * abs_logit.max(axis=1)
    y = np.zeros_like(x)
    err = np.zeros_like(x)
    mag = np.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(K):
            state = expert_state(w, chosen[t, j])
            ye, be = bound.forward_and_bound(state, x[t:t + 1], "clamped_swish", True)
            if mistake:
                ye = expert_forward(state, x[t:t + 1], **mistake)
            dw = weights[t, j] * (2 * dl[t] + EVAL_ULPS * U)
            y[t] += weights[t, j] * ye[0]
            err[t] += weights[t, j] * be[0] + dw * (np.abs(ye[0]) + be[0])
            mag[t] += np.abs(weights[t, j] * ye[0])
    return y, err + (K + 1) * U * mag + 2.0**-126


def draw_inputs(w, tokens, seed):
    """Tokens whose k-th and (k+1)-th logits differ by ≥ 1e-3 (far above the f32 error)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < tokens:
        x = rng.uniform(-1, 1, (1, D))
        logits = np.sort(route(w, x)[0][0])[::-1]
        if logits[K - 1] - logits[K] > 1e-3:
            out.append(x[0])
    return np.array(out)


def hf_tensors(w):
    p = "model.layers.0.mlp."
    return {p + "router.weight": w["router"], p + "router.bias": w["router_bias"],
            p + "experts.gate_up_proj": w["gate_up"], p + "experts.gate_up_proj_bias": w["gate_up_bias"],
            p + "experts.down_proj": w["down"], p + "experts.down_proj_bias": w["down_bias"]}


def write_hf(folder, w, config_changes=None, tensors=None):
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "gpt_oss", "hidden_act": "silu", "num_local_experts": E, "num_experts_per_tok": K,
              "intermediate_size": H, "swiglu_limit": 7.0}
    config.update(config_changes or {})
    (folder / "config.json").write_text(json.dumps(config))
    files.write_safetensors(folder / "model.safetensors", tensors if tensors is not None else hf_tensors(w))
    return folder


def write_gguf(path, w):
    import gguf

    writer = gguf.GGUFWriter(str(path), arch="gpt-oss")
    writer.add_uint32("gpt-oss.expert_count", E)
    writer.add_uint32("gpt-oss.expert_used_count", K)
    writer.add_uint32("gpt-oss.expert_feed_forward_length", H)
    gu, b = w["gate_up"].numpy(), w["gate_up_bias"].numpy()
    tensors = {
        "blk.0.ffn_gate_inp.weight": w["router"].numpy(), "blk.0.ffn_gate_inp.bias": w["router_bias"].numpy(),
        "blk.0.ffn_gate_exps.weight": np.ascontiguousarray(gu[:, :, 0::2].transpose(0, 2, 1)),
        "blk.0.ffn_up_exps.weight": np.ascontiguousarray(gu[:, :, 1::2].transpose(0, 2, 1)),
        "blk.0.ffn_down_exps.weight": np.ascontiguousarray(w["down"].numpy().transpose(0, 2, 1)),
        "blk.0.ffn_gate_exps.bias": np.ascontiguousarray(b[:, 0::2]),
        "blk.0.ffn_up_exps.bias": np.ascontiguousarray(b[:, 1::2]),
        "blk.0.ffn_down_exps.bias": w["down_bias"].numpy(),
    }
    for name, t in tensors.items():
        writer.add_tensor(name, np.ascontiguousarray(t, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    w = make_layer()
    x = draw_inputs(w, 24, seed=1)
    tmp = tmp_path_factory.mktemp("gpt_oss")
    np.save(tmp / "x.npy", x.astype(np.float32))
    return w, x, tmp


def run_forward(run_ffn, weights, x_path, out, *extra):
    run_ffn("forward", "--weights", weights, "--input", x_path, "--output", out, "--quiet", *extra)
    return np.load(out).astype(np.float64)


def test_bound_rejects_the_usual_mistakes(case):
    w, x, _ = case
    xf = x.astype(np.float32).astype(np.float64)
    y, b = reference(w, xf)
    # Clamps engaged: some gates above 7 and ups beyond ±7 among the chosen experts.
    state = expert_state(w, 0)
    gate = xf @ state["gate.weight"].T + state["gate.bias"]
    assert (gate > 7).mean() > 0.05 and (np.abs(xf @ state["up.weight"].T + state["up.bias"]) > 7).mean() > 0.05
    for mistake in ({"clamp": False}, {"shift": 0.0}, {"swap": True}, {"softmax_over_all": True}):
        wrong, _ = reference(w, xf, **mistake)
        assert np.max(np.abs(wrong - y) / b) > 100, mistake


@pytest.mark.parametrize("form", ["hugging face", "gguf"])
def test_forward_within_the_bound_and_routing_agrees(case, run_ffn, ffn_module, form):
    w, x, tmp = case
    path = write_hf(tmp / "hf", w) if form == "hugging face" else write_gguf(tmp / "m.gguf", w)
    y = run_forward(run_ffn, path, tmp / "x.npy", tmp / f"y_{form.replace(' ', '_')}.npy")
    ref, b = reference(w, x.astype(np.float32).astype(np.float64))
    ratio = np.max(np.abs(y - ref) / b)
    assert ratio <= 1.0, f"{form}: worst error {ratio:.3g} of the bound"
    m = ffn_module.load(str(path))
    assert m.experts == E and m.top_k == K and m.scoring == "softmax_top_k" and m.variant == "swiglu_oai"
    xf = x.astype(np.float32)
    assert np.array_equal(m(xf), y.astype(np.float32))
    experts, weights = m.route(xf)
    _, chosen, ref_w = route(w, xf.astype(np.float64))
    assert np.array_equal(experts, chosen)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-5, atol=1e-7)


def test_bit_identical_for_threads_and_batches(case, run_ffn):
    w, x, tmp = case
    folder = write_hf(tmp / "hf_threads", w)
    ys = [run_forward(run_ffn, folder, tmp / "x.npy", tmp / f"y_t{t}.npy", "--threads", t) for t in (1, 2, 3)]
    assert np.array_equal(ys[0], ys[1]) and np.array_equal(ys[0], ys[2])
    np.save(tmp / "x5.npy", x[5].astype(np.float32))
    one = run_forward(run_ffn, folder, tmp / "x5.npy", tmp / "y5.npy")
    assert np.array_equal(one, ys[0][5])


def test_hostile_checkpoints_are_named(case, run_ffn):
    w, _, tmp = case

    def fails(folder, *names):
        p = run_ffn("forward", "--weights", folder, "--input", tmp / "x.npy", "--output", tmp / "bad.npy",
                    check=False)
        assert p.returncode != 0, p.stdout
        for n in names:
            assert n in p.stderr, p.stderr

    fails(write_hf(tmp / "limit", w, {"swiglu_limit": 8.0}), "swiglu_limit")
    fails(write_hf(tmp / "too_many", w, {"num_experts_per_tok": E + 1}), "num_experts_per_tok")
    tensors = hf_tensors(w)
    tensors["model.layers.0.mlp.router.weight"] = w["router"][:, :-1].contiguous()
    fails(write_hf(tmp / "router", w, tensors=tensors), "router")
    tensors = hf_tensors(w)
    del tensors["model.layers.0.mlp.experts.down_proj_bias"]
    fails(write_hf(tmp / "bias", w, tensors=tensors), "bias")
    # Dense experts beside the release's MXFP4 blocks: refused by name, neither form chosen.
    tensors = hf_tensors(w)
    tensors["model.layers.0.mlp.experts.gate_up_proj_blocks"] = torch.zeros(E, 2 * H, D // 32, 16)
    fails(write_hf(tmp / "mxfp4", w, tensors=tensors), "MXFP4")


# ---- The MXFP4 release: experts as U8 _blocks [E, rows, in/32, 16] and _scales [E, rows, in/32]
#
# transformers' convert_moe_packed_tensors (integrations/mxfp4.py), restated from its
# definition: byte i of a block holds the e2m1 code of element 2i in its low nibble and of
# element 2i+1 in its high nibble; element = FP4[code]·2^(scale − 127); the [E, rows, in]
# result is transposed to the [E, in, rows] parameter GptOssExperts multiplies by — so
# gate_up_proj_blocks [E, 2H, D/32, 16] holds gate (even rows) and up (odd rows) of
# gate_up_proj [E, D, 2H], and down_proj_blocks [E, D, H/32, 16] holds down_proj [E, H, D].
# ffn repacks the bytes into ggml's MXFP4 blocks (the scale byte, then byte j = element j |
# element j+16 << 4) and runs them as mxfp4. That kernel quantises its activations (x, and h
# before down) to int8 blocks of 32 as ggml's q8 (a weight and an activation code meet in
# an integer dot product), so against the exact answer of the dequantised weights the f32
# bound does not hold alone: the MXFP4 runs get the f32 bound plus bound.py's activation
# quantisation term (the contract of the integer types, test_kquant_files.py), and the sharp
# check of that file — relative RMS within 3e-3 of the forward with x and h emulated as q8
# — which a wrong nibble order, scale, interleave or layer misses by orders of magnitude.
# With --dtype f32 the repacked weights decode exactly to f32 and the run has f32
# activations: there the plain f32 bound applies, as for an f32 checkpoint of the same values.
FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
MXFP4_ACTIVATION_BLOCK = 32


def hf_codes(blocks):
    """Codes [..., G, 32] in element order of the release's blocks [..., G, 16]."""
    return torch.stack((blocks & 0xF, blocks >> 4), dim=-1).reshape(*blocks.shape[:-1], 32)


def dequantise_hf(blocks, scales):
    """The release's pair as transformers dequantises it: [E, in, rows] f32 (exact)."""
    values = np.asarray(FP4, dtype=np.float64)[hf_codes(blocks).long().numpy()]  # [E, rows, G, 32]
    exact = np.ldexp(values, scales.numpy().astype(np.int64)[..., None] - 127)
    E_, rows, G, _ = exact.shape
    return torch.from_numpy(exact.reshape(E_, rows, G * 32).transpose(0, 2, 1).astype(np.float32).copy())


def ggml_mxfp4(blocks, scales):
    """ggml's block_mxfp4 bytes [..., G·17] of the release's pair [..., G, 16], [..., G]."""
    c = hf_codes(blocks)
    qs = c[..., :16] | (c[..., 16:] << 4)
    return torch.cat((scales.unsqueeze(-1), qs), dim=-1).reshape(*scales.shape[:-1], -1).numpy()


def make_mxfp4_layer(seed=0):
    """Random codes (all 16, −0 included) and e8m0 scales giving magnitudes near make_layer's:
    gate_up 2^(123 … 127 − 127)·|code| ≤ 6 (the clamps engaged), down ≤ 6·2^−4. Returns the
    dequantised layer (make_layer's dict) and the release's tensors."""
    g = torch.Generator().manual_seed(seed + 100)

    def codes(*shape):
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)

    def scales(lo, hi, *shape):
        return torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.uint8)

    packed = {"gate_up_blocks": codes(E, 2 * H, D // 32, 16), "gate_up_scales": scales(123, 127, E, 2 * H, D // 32),
              "down_blocks": codes(E, D, H // 32, 16), "down_scales": scales(119, 123, E, D, H // 32)}
    w = dict(make_layer(seed), gate_up=dequantise_hf(packed["gate_up_blocks"], packed["gate_up_scales"]),
             down=dequantise_hf(packed["down_blocks"], packed["down_scales"]))
    return w, packed


def hf_mxfp4_tensors(w, packed):
    p = "model.layers.0.mlp."
    return {p + "router.weight": w["router"], p + "router.bias": w["router_bias"],
            p + "experts.gate_up_proj_blocks": packed["gate_up_blocks"],
            p + "experts.gate_up_proj_scales": packed["gate_up_scales"],
            p + "experts.gate_up_proj_bias": w["gate_up_bias"],
            p + "experts.down_proj_blocks": packed["down_blocks"],
            p + "experts.down_proj_scales": packed["down_scales"], p + "experts.down_proj_bias": w["down_bias"]}


# The release's config.json says how its experts are stored.
MXFP4_CONFIG = {"quantization_config": {"quant_method": "mxfp4",
                                        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                   "model.embed_tokens", "lm_head"]}}


def write_hf_mxfp4(folder, w, packed, config_changes=None, tensors=None):
    return write_hf(folder, w, {**MXFP4_CONFIG, **(config_changes or {})},
                    tensors if tensors is not None else hf_mxfp4_tensors(w, packed))


def write_gguf_mxfp4(path, w, packed):
    """The same layer in GGUF names (gguf-py), its experts the repacked MXFP4 blocks."""
    import gguf

    Q = gguf.GGMLQuantizationType
    writer = gguf.GGUFWriter(str(path), arch="gpt-oss")
    writer.add_uint32("gpt-oss.expert_count", E)
    writer.add_uint32("gpt-oss.expert_used_count", K)
    writer.add_uint32("gpt-oss.expert_feed_forward_length", H)
    gub, gus = packed["gate_up_blocks"], packed["gate_up_scales"]
    b = w["gate_up_bias"].numpy()
    for name, t in {"blk.0.ffn_gate_exps.weight": ggml_mxfp4(gub[:, 0::2], gus[:, 0::2]),
                    "blk.0.ffn_up_exps.weight": ggml_mxfp4(gub[:, 1::2], gus[:, 1::2]),
                    "blk.0.ffn_down_exps.weight": ggml_mxfp4(packed["down_blocks"], packed["down_scales"])}.items():
        writer.add_tensor(name, np.ascontiguousarray(t), raw_dtype=Q.MXFP4)
    for name, t in {"blk.0.ffn_gate_inp.weight": w["router"].numpy(), "blk.0.ffn_gate_inp.bias": w["router_bias"].numpy(),
                    "blk.0.ffn_gate_exps.bias": b[:, 0::2], "blk.0.ffn_up_exps.bias": b[:, 1::2],
                    "blk.0.ffn_down_exps.bias": w["down_bias"].numpy()}.items():
        writer.add_tensor(name, np.ascontiguousarray(t, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def reference_q8(w, x):
    """reference(w, x) with the bound widened by the q8 activation term of each chosen expert."""
    y, b = reference(w, x)
    _, chosen, weights = route(w, x)
    for t in range(x.shape[0]):
        for j in range(K):
            state = expert_state(w, chosen[t, j])
            b[t] += weights[t, j] * bound.quantisation_bound(state, x[t:t + 1], "clamped_swish", True,
                                                             MXFP4_ACTIVATION_BLOCK, MXFP4_ACTIVATION_BLOCK)[0]
    return y, b


def emulated_q8(w, x):
    """The layer with x and each expert's h quantised as ggml's q8_0 (float64 otherwise)."""
    from test_kquant_files import q8_0_values

    _, chosen, weights = route(w, x)
    y = np.zeros_like(x)
    for t in range(x.shape[0]):
        x8 = q8_0_values(x[t:t + 1])
        for j in range(K):
            s = expert_state(w, chosen[t, j])
            gate = np.minimum(x8 @ s["gate.weight"].T + s["gate.bias"], 7.0)
            up = np.clip(x8 @ s["up.weight"].T + s["up.bias"], -7.0, 7.0)
            h = (up + 1.0) * gate / (1.0 + np.exp(-1.702 * gate))
            y[t] += weights[t, j] * (q8_0_values(h) @ s["down.weight"].T + s["down.bias"])[0]
    return y


def relative_rms(y, ref):
    return float(np.sqrt(np.mean((y - ref) ** 2) / np.mean(ref**2)))


EMULATED_ERROR = 3e-3  # as test_kquant_files.py: room for a few boundary codes, far below any mistake


@pytest.fixture(scope="module")
def mxfp4_case(tmp_path_factory):
    w, packed = make_mxfp4_layer()
    x = draw_inputs(w, 24, seed=2)
    tmp = tmp_path_factory.mktemp("gpt_oss_mxfp4")
    np.save(tmp / "x.npy", x.astype(np.float32))
    return w, packed, x, tmp


def test_mxfp4_layer_engages_the_clamps_and_the_checks_see_mistakes(mxfp4_case):
    w, packed, x, _ = mxfp4_case
    xf = x.astype(np.float32).astype(np.float64)
    state = expert_state(w, 0)
    gate = xf @ state["gate.weight"].T + state["gate.bias"]
    assert (gate > 7).mean() > 0.05 and (np.abs(xf @ state["up.weight"].T + state["up.bias"]) > 7).mean() > 0.05
    y = emulated_q8(w, xf)
    # Nibbles of a byte swapped, or the scale off by one: far outside the sharp check.
    swapped = dict(w, gate_up=dequantise_hf((packed["gate_up_blocks"] << 4) | (packed["gate_up_blocks"] >> 4),
                                            packed["gate_up_scales"]))
    off_by_one = dict(w, down=dequantise_hf(packed["down_blocks"], packed["down_scales"] + 1))
    for wrong in (swapped, off_by_one):
        assert relative_rms(emulated_q8(wrong, xf), y) > 30 * EMULATED_ERROR


def test_mxfp4_release_runs_as_mxfp4_within_the_bound(mxfp4_case, run_ffn, ffn_module):
    w, packed, x, tmp = mxfp4_case
    folder = write_hf_mxfp4(tmp / "hf", w, packed)
    info = json.loads(run_ffn("info", "--weights", folder, "--json").stdout)
    assert [(l["moe"], l["expert_types"], l["experts"], l["expert_hidden"]) for l in info["layers"]] == \
        [(True, "mxfp4", E, H)]
    assert "experts (mxfp4)" in run_ffn("info", "--weights", folder).stdout
    said = run_ffn("forward", "--weights", folder, "--input", tmp / "x.npy", "--output", tmp / "y.npy").stdout
    assert "weights mxfp4" in said and "mxfp4" in said.split("names")[0], said
    y = np.load(tmp / "y.npy").astype(np.float64)
    xf = x.astype(np.float32).astype(np.float64)
    ref, b = reference_q8(w, xf)
    ratio = np.max(np.abs(y - ref) / b)
    assert ratio <= 1.0, f"worst error {ratio:.3g} of the bound"
    rel = relative_rms(y, emulated_q8(w, xf))
    assert rel <= EMULATED_ERROR, f"{rel:.3g} off the emulated q8 forward"
    m = ffn_module.load(str(folder))
    assert m.experts == E and m.top_k == K and m.variant == "swiglu_oai"
    assert m.types == {"gate": "mxfp4", "up": "mxfp4", "down": "mxfp4"}
    assert np.array_equal(m(x.astype(np.float32)), y.astype(np.float32))
    experts, _ = m.route(x.astype(np.float32))
    assert np.array_equal(experts, route(w, xf)[1])


def test_mxfp4_release_decoded_to_f32_is_within_the_f32_bound(mxfp4_case, run_ffn):
    """--dtype f32: the repacked blocks decoded (exactly) and run with f32 activations."""
    w, packed, x, tmp = mxfp4_case
    folder = write_hf_mxfp4(tmp / "hf_f32", w, packed)
    said = run_ffn("forward", "--weights", folder, "--input", tmp / "x.npy", "--output", tmp / "y32.npy",
                   "--dtype", "f32").stdout
    assert "weights f32 (stored mxfp4)" in said, said
    y = np.load(tmp / "y32.npy").astype(np.float64)
    ref, b = reference(w, x.astype(np.float32).astype(np.float64))
    ratio = np.max(np.abs(y - ref) / b)
    assert ratio <= 1.0, f"worst error {ratio:.3g} of the f32 bound"


def test_mxfp4_release_is_bit_identical_to_the_gguf_of_its_repacked_blocks(mxfp4_case, run_ffn, ffn_module):
    w, packed, x, tmp = mxfp4_case
    folder = write_hf_mxfp4(tmp / "hf_vs_gguf", w, packed)
    path = write_gguf_mxfp4(tmp / "mxfp4.gguf", w, packed)
    said = run_ffn("forward", "--weights", path, "--input", tmp / "x.npy", "--output", tmp / "y_gguf.npy").stdout
    assert "weights mxfp4" in said, said
    y_hf = run_forward(run_ffn, folder, tmp / "x.npy", tmp / "y_hf.npy")
    y_gguf = np.load(tmp / "y_gguf.npy").astype(np.float64)
    assert np.array_equal(y_hf, y_gguf)
    xf = x.astype(np.float32)
    assert np.array_equal(ffn_module.load(str(path))(xf), ffn_module.load(str(folder))(xf))


def test_mxfp4_release_sharded_as_released(mxfp4_case, run_ffn):
    """The release is sharded (model.safetensors.index.json): each _blocks in one shard and
    its _scales in another here, and the answer is the single file's, bit for bit."""
    w, packed, x, tmp = mxfp4_case
    folder = tmp / "sharded"
    write_hf_mxfp4(folder, w, packed)
    (folder / "model.safetensors").unlink()
    weight_map, shards = {}, ({}, {})
    for i, (name, t) in enumerate(hf_mxfp4_tensors(w, packed).items()):
        shards[i % 2][name] = t
        weight_map[name] = f"model-0000{i % 2}-of-00002.safetensors"
    for i, shard in enumerate(shards):
        files.write_safetensors(folder / f"model-0000{i}-of-00002.safetensors", shard)
    assert weight_map["model.layers.0.mlp.experts.gate_up_proj_blocks"] != \
        weight_map["model.layers.0.mlp.experts.gate_up_proj_scales"]
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    single = run_forward(run_ffn, write_hf_mxfp4(tmp / "single", w, packed), tmp / "x.npy", tmp / "y_single.npy")
    assert np.array_equal(run_forward(run_ffn, folder, tmp / "x.npy", tmp / "y_sharded.npy"), single)


def test_gguf_py_dequantises_the_repacked_blocks_to_the_release_values(mxfp4_case):
    """llama.cpp's gguf-py reads ggml's layout of the repack as transformers reads the
    release: every value equal, for every scale byte 0 … 252 (2^−127 … 2^125; from 253 on,
    6·2^(s − 127) overflows f32 in both)."""
    gguf = pytest.importorskip("gguf")
    g = torch.Generator().manual_seed(5)
    blocks = torch.randint(0, 256, (2, 253, 3, 16), generator=g, dtype=torch.uint8)
    scales = torch.arange(253, dtype=torch.uint8).repeat(2, 3, 1).permute(0, 2, 1).contiguous()  # [2, 253, 3]
    ours = gguf.quants.dequantize(ggml_mxfp4(blocks, scales), gguf.GGMLQuantizationType.MXFP4)  # [2, 253, 96]
    release = dequantise_hf(blocks, scales).numpy().transpose(0, 2, 1)
    assert ours.shape == release.shape
    assert np.array_equal(ours, release)
    _, packed, _, _ = mxfp4_case
    ours = gguf.quants.dequantize(ggml_mxfp4(packed["down_blocks"], packed["down_scales"]),
                                  gguf.GGMLQuantizationType.MXFP4)
    assert np.array_equal(ours, dequantise_hf(packed["down_blocks"], packed["down_scales"]).numpy().transpose(0, 2, 1))


def test_hostile_mxfp4_checkpoints_are_named(mxfp4_case, run_ffn, ffn_module):
    w, packed, _, tmp = mxfp4_case
    p = "model.layers.0.mlp.experts."

    def fails(folder, *parts):
        r = run_ffn("forward", "--weights", folder, "--input", tmp / "x.npy", "--output", tmp / "bad.npy", check=False)
        assert r.returncode != 0, r.stdout
        assert "Traceback" not in r.stderr and "terminate" not in r.stderr, r.stderr
        for part in parts:
            assert part in r.stderr, r.stderr
        with pytest.raises(ffn_module.Error):
            ffn_module.load(str(folder))

    def with_tensors(name, **changes):
        t = hf_mxfp4_tensors(w, packed)
        for k, v in changes.items():
            if v is None:
                del t[p + k]
            else:
                t[p + k] = v
        return write_hf_mxfp4(tmp / name, w, packed, tensors=t)

    gus, dub = packed["gate_up_scales"], packed["down_blocks"]
    # Scales and blocks disagree; down disagrees with gate_up.
    fails(with_tensors("scales_shape", gate_up_proj_scales=gus[:, :, :1].contiguous()),
          p + "gate_up_proj_scales", "[8, 192, 1]", "[8, 192, 2]")
    fails(with_tensors("down_shape", down_proj_blocks=dub[:, :, :2].contiguous(),
                       down_proj_scales=packed["down_scales"][:, :, :2].contiguous()), p + "down_proj_blocks", "[8, 64, 64]")
    fails(with_tensors("block_bytes", down_proj_blocks=dub[..., :8].contiguous()), p + "down_proj_blocks", "16]")
    # Missing scales; blocks without their partner.
    fails(with_tensors("no_scales", down_proj_scales=None), p + "down_proj_scales", "missing")
    fails(with_tensors("no_down", down_proj_blocks=None, down_proj_scales=None), p + "down_proj_blocks", "missing")
    # Not U8.
    fails(with_tensors("f32_blocks", gate_up_proj_blocks=packed["gate_up_blocks"].float()),
          p + "gate_up_proj_blocks", "dtype F32", "U8")
    fails(with_tensors("f32_scales", down_proj_scales=packed["down_scales"].float()), p + "down_proj_scales", "F32")
    # e8m0 0xff (NaN): refused, as in MXFP4 GGUF files (check_block_scales).
    nan = gus.clone()
    nan[3, 17, 1] = 0xFF
    fails(with_tensors("nan_scale", gate_up_proj_scales=nan), p + "gate_up_proj_scales", "expert 3, row 17, block 1",
          "NaN")
    # Dense and MXFP4 experts in one layer: refused, not one of them silently chosen.
    fails(with_tensors("both_forms", gate_up_proj=w["gate_up"]), "MXFP4", "gate_up_proj_blocks", "one form")
    # Counts disagreeing with config.json.
    fails(write_hf_mxfp4(tmp / "experts", w, packed, {"num_local_experts": E + 1}), "num_local_experts")
    fails(write_hf_mxfp4(tmp / "hidden", w, packed, {"intermediate_size": H + 32}), "hidden size")
    # A truncated file.
    folder = write_hf_mxfp4(tmp / "truncated", w, packed)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:len(data) - 1000])
    fails(folder, "model.safetensors")
