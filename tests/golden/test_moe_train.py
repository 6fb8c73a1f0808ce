"""Gradients of MoE blocks (ffn.TrainableMoe, issue 24) against PyTorch autograd through the
restated Hugging Face modules of moe_reference.py — Mixtral, Qwen2-MoE, Qwen3-MoE and
DeepSeek-V3 — and gpt-oss's GptOssMLP (restated here in torch), run in float64, of the objective sum(dy·y) + balance·loss_b, loss_b the
Switch Transformer load-balancing loss as transformers' load_balancing_loss_func computes it
for one layer (E · Σ_e tokens_per_expert_e · router_prob_per_expert_e).

Tolerance, per tensor: |g − g_ref| ≤ 1e-4·max|g_ref| + 1e-3·|g_ref|. Each gradient element
is a sum over ≤ 48 tokens of products through chains of length D and H (≤ 128) in f32, whose
rounding stays below ~1e-5 of the tensor's scale; PyTorch's own float32 autograd of the same
module is checked against the same tolerance (the test would be wrong if it failed there).
A dropped term of the chain rule (the softmax's −Σw·dw, the renormalisation, the sigmoid's
derivative, the routed scaling, the shared gate's σ', the balance loss) moves the gradients
by more than 10 times the tolerance (test_the_tolerance_rejects_a_missing_term); the balance
loss's gradient is checked alone, with dy = 0 (test_the_balance_loss_gradient_alone).
"""
import numpy as np
import pytest
import torch

import moe_reference as mr

FAMILIES = [f for f in mr.SPECS if f not in mr.WEIGHT_INPUT]  # Llama 4's input weighting is inference-only
TOKENS = 48
BALANCE = 0.5


def trainable(ffn, spec, w):
    """ffn.TrainableMoe holding the layer w of moe_reference.random_layer."""
    m = ffn.TrainableMoe("swiglu", spec.d, spec.hidden, spec.experts, spec.k, scoring=spec.scoring,
                         normalize_top_k=spec.norm, routed_scaling=spec.scale, groups=spec.groups,
                         top_groups=spec.groups_kept, choice_bias=spec.bias, shared_hidden=spec.shared_hidden,
                         shared_gate=spec.shared_gated)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    m.set_tensor("router.weight", f32(w["router"]))
    for e in range(spec.experts):
        for proj in ("gate", "up", "down"):
            m.set_tensor(f"experts.{e}.{proj}.weight", f32(w[proj][e]))
    if spec.shared_hidden:
        for proj in ("gate", "up", "down"):
            m.set_tensor(f"shared.{proj}.weight", f32(w["shared." + proj]))
    if spec.shared_gated:
        m.set_tensor("shared_gate.weight", f32(w["shared_gate"][0]))
    if spec.bias:
        m.set_tensor("router.choice_bias", f32(w["bias"]))
    return m


def balance_loss(spec, logits, idx):
    """transformers' load_balancing_loss_func for one layer, on the experts actually chosen."""
    probs = torch.softmax(logits, dim=-1)
    mask = torch.nn.functional.one_hot(idx, spec.experts).to(probs.dtype)  # [T, k, E]
    tokens_per_expert = mask.mean(dim=0)  # [k, E]
    router_prob_per_expert = probs.mean(dim=0)  # [E]
    return (tokens_per_expert * router_prob_per_expert.unsqueeze(0)).sum() * spec.experts


def autograd(spec, w, x, dy, balance, dtype=torch.float64, mutation=None):
    """(gradients by ffn's names, dx, loss_b) of sum(dy·y) + balance·loss_b through the module;
    mutation: one of SparseMoe's deliberate mistakes, or no_balance (the balance term left out)."""
    module = mr.SparseMoe(spec, w, dtype=dtype, mutation=None if mutation == "no_balance" else mutation)
    params = {"router.weight": module.router}
    for e, ex in enumerate(module.experts):
        params.update({f"experts.{e}.gate.weight": ex.gate, f"experts.{e}.up.weight": ex.up,
                       f"experts.{e}.down.weight": ex.down})
    if module.shared is not None:
        params.update({"shared.gate.weight": module.shared.gate, "shared.up.weight": module.shared.up,
                       "shared.down.weight": module.shared.down})
    if module.shared_gate is not None:
        params["shared_gate.weight"] = module.shared_gate
    for p in params.values():
        p.requires_grad_(True)
    xt = torch.tensor(x, dtype=dtype, requires_grad=True)
    y = module(xt)
    idx, _ = module.route(xt)
    logits = xt @ module.router.T
    lb = balance_loss(spec, logits, idx)
    objective = (torch.as_tensor(dy, dtype=dtype) * y).sum() + balance * lb
    if mutation == "no_balance":
        objective = (torch.as_tensor(dy, dtype=dtype) * y).sum()
    objective.backward()
    grads = {name: p.grad.detach().numpy().astype(np.float64) for name, p in params.items() if p.grad is not None}
    if "shared_gate.weight" in grads:
        grads["shared_gate.weight"] = grads["shared_gate.weight"][0]  # ffn's is [D], the module's [1, D]
    return grads, xt.grad.detach().numpy().astype(np.float64), float(lb)


def worst(got, ref):
    """max over elements of |g − ref| / (1e-4·max|ref| + 1e-3·|ref|)."""
    tol = 1e-4 * np.abs(ref).max() + 1e-3 * np.abs(ref)
    return float((np.abs(got.astype(np.float64) - ref) / tol).max())


def layer_and_inputs(family, seed=7):
    spec = mr.SPECS[family]
    w = mr.random_model(spec, seed)[1]
    rng = np.random.default_rng(seed + 1)
    x = mr.draw_inputs(spec, w, rng, TOKENS)
    dy = rng.standard_normal((TOKENS, spec.d)).astype(np.float32)
    return spec, w, x, dy


@pytest.mark.parametrize("balance", [0.0, BALANCE])
@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_match_autograd(ffn_module, family, balance):
    spec, w, x, dy = layer_and_inputs(family)
    m = trainable(ffn_module, spec, w)
    got = m.backward(x, dy, balance=balance)
    ref, dx_ref, lb_ref = autograd(spec, w, x, dy, balance)
    assert got["balance_loss"] == pytest.approx(lb_ref, rel=1e-6)  # from f32 logits (a few ulps each)
    assert set(ref) <= set(got), f"ffn lacks gradients of {sorted(set(ref) - set(got))}"
    for name, g in ref.items():
        assert worst(got[name], g) <= 1, f"{family} {name}: {worst(got[name], g):.3g}× the tolerance"
    assert worst(got["x"], dx_ref) <= 1, f"{family} dx: {worst(got['x'], dx_ref):.3g}× the tolerance"
    # The forward is the module's too (the routing agrees: inputs away from near-ties).
    with torch.no_grad():
        y_ref = mr.SparseMoe(spec, w)(torch.from_numpy(x.astype(np.float64))).numpy()
    y = m.forward(x)
    assert np.abs(y - y_ref).max() <= 1e-4 * np.abs(y_ref).max()


@pytest.mark.parametrize("family", FAMILIES)
def test_pytorch_float32_meets_the_tolerance(family):
    spec, w, x, dy = layer_and_inputs(family)
    ref, dx_ref, _ = autograd(spec, w, x, dy, BALANCE)
    f32, dx_f32, _ = autograd(spec, w, x, dy, BALANCE, dtype=torch.float32)
    for name, g in ref.items():
        assert worst(f32[name], g) <= 1, f"torch f32 {name}: {worst(f32[name], g):.3g}× the tolerance"
    assert worst(dx_f32, dx_ref) <= 1


@pytest.mark.parametrize("family,mutation,tensor", [
    ("mixtral", "no_renorm", "router.weight"),
    ("qwen2_moe", "ungated_shared", "shared.down.weight"),
    ("deepseek_v3", "no_scale", "router.weight"),
    ("deepseek_v3", "no_renorm", "router.weight"),
])
def test_the_tolerance_rejects_a_missing_term(family, mutation, tensor):
    spec, w, x, dy = layer_and_inputs(family)
    ref, _, _ = autograd(spec, w, x, dy, BALANCE)
    wrong, _, _ = autograd(spec, w, x, dy, BALANCE, mutation=mutation)
    assert worst(wrong[tensor], ref[tensor]) > 10


@pytest.mark.parametrize("family", ["mixtral", "deepseek_v3"])
def test_the_balance_loss_gradient_alone(ffn_module, family):
    """dy = 0: the gradients are the balance loss's alone (beside the others, at a weight of
    0.5, it is a few per cent of the router's gradient), through the router and into x."""
    spec, w, x, _ = layer_and_inputs(family)
    dy = np.zeros_like(x)
    got = trainable(ffn_module, spec, w).backward(x, dy, balance=BALANCE)
    ref, dx_ref, _ = autograd(spec, w, x, dy, BALANCE)
    assert np.abs(ref["router.weight"]).max() > 0
    assert worst(got["router.weight"], ref["router.weight"]) <= 1
    assert worst(got["x"], dx_ref) <= 1
    assert np.abs(got["experts.0.up.weight"]).max() == 0  # no path from loss_b to the experts


def test_threads_give_the_same_bits(ffn_module):
    spec, w, x, dy = layer_and_inputs("deepseek_v3")
    m = trainable(ffn_module, spec, w)
    one, three = m.backward(x, dy, balance=BALANCE, threads=1), m.backward(x, dy, balance=BALANCE, threads=3)
    for name in one:
        assert np.array_equal(np.asarray(one[name]), np.asarray(three[name])), name


def test_errors_name_the_problem(ffn_module):
    ffn = ffn_module
    m = ffn.TrainableMoe("swiglu", 16, 24, 4, 2)
    with pytest.raises(ffn.Error, match="router.weight"):
        m.set_tensor("router.weight", np.zeros((3, 16), np.float32))
    with pytest.raises(ffn.Error, match="no parameter 'experts.9.up.weight'"):
        m.tensor("experts.9.up.weight")
    with pytest.raises(ffn.Error, match="top_k"):
        ffn.TrainableMoe("swiglu", 16, 24, 4, 5)
    x = np.zeros((3, 16), np.float32)
    with pytest.raises(ffn.Error, match="balance-loss weight"):
        m.backward(x, x, balance=-1)
    x[1, 2] = np.nan
    with pytest.raises(ffn.Error, match="token 1"):
        m.forward(x)


def test_gpt_oss_gradients_match_autograd(ffn_module):
    """gpt-oss (GptOssMLP restated in torch): router bias, softmax over the chosen k, experts
    with biases, gate and up interleaved in gate_up_proj [E, D, 2H], the clamped activation
    (gate ≤ 7, up in ±7, (up + 1)·gate·σ(1.702·gate); torch's clamp passes the gradient inside
    the interval, as ffn's does). Weights at 15× nn.Linear's scale engage the clamps."""
    import test_moe_gpt_oss as oss
    w = {name: t.double() for name, t in oss.make_layer(seed=3).items()}
    x = oss.draw_inputs(oss.make_layer(seed=3), 24, seed=4).astype(np.float32)
    dy = np.random.default_rng(5).standard_normal(x.shape).astype(np.float32)
    params = {name: t.clone().requires_grad_(True) for name, t in w.items()}
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    logits = xt @ params["router"].T + params["router_bias"]
    top, chosen = torch.topk(logits, oss.K, dim=-1)
    weights = torch.softmax(top, dim=-1)
    y = torch.zeros_like(xt)
    for e in range(oss.E):
        tokens, slot = torch.nonzero(chosen == e, as_tuple=True)
        if not len(tokens):
            continue
        gu = xt[tokens] @ params["gate_up"][e] + params["gate_up_bias"][e]
        gate, up = gu[:, 0::2].clamp(max=7.0), gu[:, 1::2].clamp(min=-7.0, max=7.0)
        out = ((up + 1) * gate * torch.sigmoid(1.702 * gate)) @ params["down"][e] + params["down_bias"][e]
        y = y.index_add(0, tokens, weights[tokens, slot, None] * out)
    (torch.as_tensor(dy, dtype=torch.float64) * y).sum().backward()
    g = {name: p.grad.numpy() for name, p in params.items()}

    m = ffn_module.TrainableMoe("swiglu_oai", oss.D, oss.H, oss.E, oss.K, scoring="softmax_top_k",
                                router_bias=True, bias=True)
    f32 = lambda a: np.ascontiguousarray(a.numpy() if hasattr(a, "numpy") else a, dtype=np.float32)
    m.set_tensor("router.weight", f32(w["router"]))
    m.set_tensor("router.bias", f32(w["router_bias"]))
    for e in range(oss.E):
        gu, b = w["gate_up"][e], w["gate_up_bias"][e]
        for name, value in (("gate.weight", gu[:, 0::2].T), ("up.weight", gu[:, 1::2].T),
                            ("down.weight", w["down"][e].T), ("gate.bias", b[0::2]), ("up.bias", b[1::2]),
                            ("down.bias", w["down_bias"][e])):
            m.set_tensor(f"experts.{e}.{name}", f32(value))
    got = m.backward(x, dy)
    checks = {"router.weight": g["router"], "router.bias": g["router_bias"], "x": xt.grad.numpy()}
    for e in range(oss.E):
        checks[f"experts.{e}.gate.weight"] = g["gate_up"][e][:, 0::2].T
        checks[f"experts.{e}.up.weight"] = g["gate_up"][e][:, 1::2].T
        checks[f"experts.{e}.down.weight"] = g["down"][e].T
        checks[f"experts.{e}.gate.bias"] = g["gate_up_bias"][e][0::2]
        checks[f"experts.{e}.up.bias"] = g["gate_up_bias"][e][1::2]
        checks[f"experts.{e}.down.bias"] = g["down_bias"][e]
    for name, ref in checks.items():
        if np.abs(ref).max() == 0:  # an expert no token chose: ffn's gradient must be 0 too
            assert np.abs(got[name]).max() == 0, name
            continue
        assert worst(got[name], ref) <= 1, f"gpt-oss {name}: {worst(got[name], ref):.3g}× the tolerance"
