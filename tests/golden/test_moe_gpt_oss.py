"""gpt-oss's mixture of experts against PyTorch: Hugging Face's GptOssMLP restated (not
copied) — a router with bias, the top k logits, softmax over those k; experts with biases
whose gate_up_proj is stored [E, D, 2H] (in × out) with gate and up interleaved (gate at
even columns), down_proj [E, H, D]; each expert's clamped activation (gate clamped above at
7, up to ±7, (up + 1)·gate·σ(1.702·gate)). Checkpoints in the Hugging Face layout (with
config.json) and in GGUF names (arch gpt-oss, through gguf-py) run through `ffn forward` and
`ffn.load`; the answer must lie within the f32 bound derived below, the routing must be the
reference's (inputs drawn away from near-ties), and the outputs bit-identical across
thread counts and batches.

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
    # The MXFP4 blocks of the release are refused by name, not misread.
    tensors = hf_tensors(w)
    tensors["model.layers.0.mlp.experts.gate_up_proj_blocks"] = torch.zeros(E, 2 * H, D // 32, 16)
    fails(write_hf(tmp / "mxfp4", w, tensors=tensors), "MXFP4")
