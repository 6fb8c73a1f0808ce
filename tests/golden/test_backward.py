"""Golden suite for backward: ffn's gradients (through `import ffn`, Block.backward) against
PyTorch's autograd running the seeds' module code (seeds.py) in float64, for every variant,
with and without bias, in both cache modes, and on every ISA.

Tolerance: a rigorous f32 error bound per element, computed in float64 from the weights, x
and dy by backward_and_bound below — the derivation of src/block/reference_backward.cpp,
which carries bound.py's forward bound through backward. It holds for any correct f32
backward whose sums of n products err by at most n*u*sum|terms| (u = 2**-24; true of every
summation order) and whose activations and derivatives are within a few ulps: PyTorch's own
float32 autograd and a float32 NumPy restatement are checked against it as well, so it is
not tuned to ffn. It comes to about 2*(d + hidden + T)*u of each gradient's sum of |terms|;
test_the_bound_catches_mistakes shows that a derivative off by less than 2e-3 (GELU's tanh
form for the exact one), silu' with a term forgotten, or a lost token falls far outside it.
"""
import copy
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import bound
import seeds

U = bound.U
CURVATURE = 1.0  # >= max|act''|: GELU (both forms) 0.798, quick_gelu 0.851, Swish 0.5, sigmoid 0.096,
                 # ReLU/relu6/identity 0; relu2's is 2 (curvature())


def curvature(activation):
    return 2.0 if activation == "relu2" else CURVATURE


def derivative_jump(activation, z, e):
    """The largest jump of act' within e of z: where the f32 pre-activation may lie across a
    kink (ReLU's 0, relu6's 0 and 6: 1; clamped_swish's 7: LIPSCHITZ); relu2's act' is continuous."""
    if activation == "relu":
        return np.where(np.abs(z) <= e, 1.0, 0.0)
    if activation == "relu6":
        return np.where((np.abs(z) <= e) | (np.abs(z - bound.RELU6_LIMIT) <= e), 1.0, 0.0)
    if activation == "clamped_swish":
        return np.where(np.abs(z - bound.OAI_LIMIT) <= e, bound.LIPSCHITZ, 0.0)
    return np.zeros_like(z)
FLOOR = 2.0**-126  # the smallest normal f32: the bound of a gradient that is exactly 0

_erfc = np.vectorize(math.erfc)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _gelu_tanh_grad(z):
    c, k = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(c * (z + k * z**3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * c * (1.0 + 3.0 * k * z * z)


# act' as PyTorch's autograd has it (relu' = 0 at 0).
DERIVATIVES = {
    "relu": lambda z: (z > 0).astype(z.dtype),
    "gelu": lambda z: 0.5 * _erfc(-z / math.sqrt(2.0)) + z * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi),
    "gelu_tanh": _gelu_tanh_grad,
    "swish": lambda z: _sigmoid(z) * (1.0 + z * (1.0 - _sigmoid(z))),
    "sigmoid": lambda z: _sigmoid(z) * (1.0 - _sigmoid(z)),
    "identity": lambda z: np.ones_like(z),
    # 0 above the limit; the limit itself passes the gradient, as autograd's clamp has it
    "clamped_swish": lambda z: np.where(z <= bound.OAI_LIMIT, _sigmoid(bound.OAI_ALPHA * z) * (
        1.0 + bound.OAI_ALPHA * z * (1.0 - _sigmoid(bound.OAI_ALPHA * z))), 0.0),
    "quick_gelu": lambda z: _sigmoid(bound.OAI_ALPHA * z) * (1.0 + bound.OAI_ALPHA * z * (1.0 - _sigmoid(bound.OAI_ALPHA * z))),
    "relu2": lambda z: 2.0 * np.maximum(z, 0.0),
    # 1 strictly inside (0, 6), 0 at both ends, as aten's hardtanh_backward
    "relu6": lambda z: ((z > 0) & (z < bound.RELU6_LIMIT)).astype(z.dtype),
}

ACTIVATION_OF = {
    "relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "swish": "swish", "glu": "sigmoid",
    "bilinear": "identity", "reglu": "relu", "geglu": "gelu", "swiglu": "swish", "gated_gelu_tanh": "gelu_tanh",
}

# d = 1, odd d, hidden not a multiple of 16, T = 1 and T = 33, with and without bias.
SHAPES = [
    # d, hidden, tokens, bias
    (1, 1, 1, False),
    (1, 3, 5, True),
    (7, 13, 2, False),
    (33, 171, 33, True),
    (64, 100, 1, False),
    (96, 256, 17, True),
]


def backward_and_bound(state, x, dy, activation, gated):
    """state: name -> float64 array; x, dy: [T, d] float64. Returns (exact, bound): dicts
    keyed "x" and by parameter name, like Block.backward's result."""
    T, d = x.shape
    hidden = state["up.weight"].shape[0]
    up, up_abs = bound._linear(x, state["up.weight"], state.get("up.bias"))
    pre, pre_abs = bound._linear(x, state["gate.weight"], state.get("gate.bias")) if gated else (up, up_abs)
    e_up, e_pre = (d + 1) * U * up_abs, (d + 1) * U * pre_abs
    a, ad = bound.ACTIVATIONS[activation](pre), DERIVATIVES[activation](pre)
    e_a = bound.lipschitz(activation, pre, e_pre) * e_pre + 8 * U * (np.abs(a) + np.abs(pre))
    # + act''s jump where the f32 pre-activation may lie across a kink
    e_ad = curvature(activation) * e_pre + 16 * U * (1 + np.abs(pre)) + derivative_jump(activation, pre, e_pre)
    oai = activation == "clamped_swish"
    wd = state["down.weight"]
    dh = dy @ wd
    e_dh = d * U * (np.abs(dy) @ np.abs(wd))
    if gated:
        # v = up, or clamped_swish's clip(up, -7, 7) + 1 with v' = [|up| <= 7] (reference_backward.cpp)
        v = bound.up_factor(activation, up)
        vd = (np.abs(up) <= bound.OAI_LIMIT).astype(up.dtype) if oai else np.ones_like(up)
        e_v = e_up + (U * np.abs(v) if oai else 0.0)
        h = a * v
        e_h = e_a * np.abs(v) + np.abs(a) * e_v + U * np.abs(h)
        du = dh * a * vd
        e_du = (e_dh * np.abs(a) + np.abs(dh) * e_a + U * np.abs(dh * a)) * vd
        if oai:  # v' may differ where the f32 up may lie across +-7
            near = np.abs(np.abs(up) - bound.OAI_LIMIT) <= e_up
            e_du = e_du + np.where(near, np.abs(dh * a) + e_dh * np.abs(a) + np.abs(dh) * e_a, 0.0)
        dg = dh * v * ad
        e_dg = (e_dh * np.abs(v * ad) + np.abs(dh) * e_v * np.abs(ad) + np.abs(dh * v) * e_ad
                + 2 * U * np.abs(dg))
    else:
        h, e_h = a, e_a
        du = dh * ad
        e_du = e_dh * np.abs(ad) + np.abs(dh) * e_ad + U * np.abs(du)

    exact, err = {}, {}

    def over_tokens(name, p, e_p, q, e_q):
        """sum_t p[t]^T q[t] for f32 factors within e_p and e_q (0 for the exact x and dy)."""
        exact[name] = p.T @ q
        err[name] = 2 * (e_p.T @ np.abs(q) + np.abs(p).T @ e_q + T * U * (np.abs(p).T @ np.abs(q))) + FLOOR

    exact_td, ones, exact_t1 = np.zeros_like(x), np.ones((T, 1)), np.zeros((T, 1))  # zero errors
    over_tokens("down.weight", dy, exact_td, h, e_h)
    over_tokens("up.weight", du, e_du, x, exact_td)
    if gated:
        over_tokens("gate.weight", dg, e_dg, x, exact_td)
    if "up.bias" in state:
        over_tokens("down.bias", dy, exact_td, ones, exact_t1)
        over_tokens("up.bias", du, e_du, ones, exact_t1)
        if gated:
            over_tokens("gate.bias", dg, e_dg, ones, exact_t1)
        for name in ("down.bias", "up.bias", "gate.bias"):
            if name in exact:
                exact[name], err[name] = exact[name][:, 0], err[name][:, 0]

    wu = state["up.weight"]
    exact["x"] = du @ wu
    propagated, magnitude, terms = e_du @ np.abs(wu), np.abs(du) @ np.abs(wu), hidden
    if gated:
        wg = state["gate.weight"]
        exact["x"] = exact["x"] + dg @ wg
        propagated, magnitude, terms = propagated + e_dg @ np.abs(wg), magnitude + np.abs(dg) @ np.abs(wg), 2 * hidden
    err["x"] = 2 * (propagated + terms * U * magnitude) + FLOOR
    return exact, err


def make_case(variant, d, hidden, tokens, bias, seed=0):
    cls, gated = seeds.VARIANTS[variant]
    torch.manual_seed(seed)
    module = cls(d, hidden=hidden, bias=bias)
    x = torch.randn(tokens, d) * 2
    dy = torch.randn(tokens, d)
    return module, gated, x, dy


def autograd(module, x, dy):
    """PyTorch's gradients of sum(dy * module(x)) in the module's dtype, keyed like ffn's."""
    x = x.clone().requires_grad_(True)
    module.zero_grad()
    module(x).backward(dy)
    grads = {"x": x.grad.numpy()}
    grads.update({name: p.grad.numpy() for name, p in module.named_parameters()})
    return grads


def worst_ratio(got, want, err):
    """Largest |got - want| / bound over every tensor, and where it is."""
    worst, where = 0.0, None
    for name, w in want.items():
        g = np.asarray(got[name], dtype=np.float64)
        assert g.shape == w.shape, name
        r = np.abs(g - w) / err[name]
        r[np.isnan(r)] = np.inf
        if r.max() > worst:
            worst, where = r.max(), (name, np.unravel_index(np.argmax(r), r.shape))
    return worst, where


def check_case(ffn_module, variant, d, hidden, tokens, bias, recompute):
    module, gated, x, dy = make_case(variant, d, hidden, tokens, bias)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    exact, err = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), ACTIVATION_OF[variant], gated)
    want = autograd(copy.deepcopy(module).double(), x.double(), dy.double())
    torch32 = autograd(module, x, dy)
    got = ffn_module.from_torch(module).backward(x.numpy(), dy.numpy(), recompute=recompute)
    assert set(got) == set(want)
    for name, w in want.items():
        # The NumPy restatement is autograd's, to float64 rounding.
        np.testing.assert_allclose(exact[name], w, rtol=1e-9, atol=1e-12, err_msg=name)
        assert got[name].dtype == np.float32 and got[name].shape == w.shape, name
    # PyTorch's own f32 autograd is within the bound: the bound is sound, not tuned to ffn.
    assert worst_ratio(torch32, want, err)[0] <= 1.0
    worst, where = worst_ratio(got, want, err)
    assert worst <= 1.0, f"{variant}: {where} off by {worst:.3g} bounds"
    return worst


@pytest.mark.parametrize("recompute", [False, True])
@pytest.mark.parametrize("variant", list(seeds.VARIANTS))
@pytest.mark.parametrize("d,hidden,tokens,bias", SHAPES)
def test_backward_matches_autograd(ffn_module, variant, d, hidden, tokens, bias, recompute):
    check_case(ffn_module, variant, d, hidden, tokens, bias, recompute)


_ISA_SCRIPT = """
import sys, numpy as np, ffn
assert ffn._core.active_isa() == sys.argv[1], ffn._core.active_isa()
case = np.load(sys.argv[2])
block = ffn.Block(str(case["variant"]), int(case["d"]), hidden=int(case["hidden"]), bias=bool(case["bias"]))
block.load_state_dict({k[2:]: case[k] for k in case.files if k.startswith("p:")})
np.savez(sys.argv[3], **block.backward(case["x"], case["dy"]))
"""


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512", "avx512_bf16"])
def test_every_isa_matches_autograd(tmp_path, ffn_module, isa):
    """The ISA is chosen once per process (FFN_ISA), so each runs in a child interpreter."""
    cpu = open("/proc/cpuinfo").read()
    needs = {"scalar": [], "avx2": ["avx2", "fma"], "avx512": ["avx512f"], "avx512_bf16": ["avx512_bf16"]}[isa]
    if any(f" {flag}" not in cpu for flag in needs):
        pytest.skip(f"this CPU lacks {isa}")
    package_root = str(pathlib.Path(ffn_module.__file__).resolve().parents[1])
    env = dict(os.environ, FFN_ISA=isa, PYTHONPATH=package_root)
    for variant in ["swiglu", "gelu", "reglu"]:
        module, gated, x, dy = make_case(variant, 33, 171, 19, True, seed=3)
        params = {"p:" + k: v.numpy() for k, v in module.state_dict().items()}
        np.savez(tmp_path / "case.npz", variant=variant, d=33, hidden=171, bias=True, x=x.numpy(), dy=dy.numpy(),
                 **params)
        subprocess.run([sys.executable, "-c", _ISA_SCRIPT, isa, tmp_path / "case.npz", tmp_path / "grads.npz"],
                       env=env, check=True, timeout=300)
        got = dict(np.load(tmp_path / "grads.npz"))
        state = {k: v.double().numpy() for k, v in module.state_dict().items()}
        _, err = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), ACTIVATION_OF[variant], gated)
        want = autograd(module.double(), x.double(), dy.double())
        worst, where = worst_ratio(got, want, err)
        assert worst <= 1.0, f"{isa} {variant}: {where} off by {worst:.3g} bounds"


def _swiglu_f32(state, x, dy, silu_grad):
    """SwiGLU's backward restated in float32 NumPy, with the given silu'."""
    g = x @ state["gate.weight"].T
    u = x @ state["up.weight"].T
    s = (1 / (1 + np.exp(-g))).astype(np.float32)
    a = g * s
    dh = dy @ state["down.weight"]
    du, dg = dh * a, (dh * u) * silu_grad(g, s)
    return {"x": du @ state["up.weight"] + dg @ state["gate.weight"], "gate.weight": dg.T @ x,
            "up.weight": du.T @ x, "down.weight": dy.T @ (a * u)}


def test_the_bound_catches_mistakes(ffn_module):
    # GELU's tanh form where the module has the exact one: derivatives differ by < 2e-3.
    module, gated, x, dy = make_case("geglu", 33, 171, 17, True)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    _, err = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), "gelu", gated)
    want = autograd(copy.deepcopy(module).double(), x.double(), dy.double())
    assert worst_ratio(ffn_module.from_torch(module).backward(x.numpy(), dy.numpy()), want, err)[0] <= 1.0
    wrong = ffn_module.from_torch(module, variant="gated_gelu_tanh").backward(x.numpy(), dy.numpy())
    assert worst_ratio(wrong, want, err)[0] > 10.0

    # A lost token: the gradients of the first 16 tokens only.
    lost = ffn_module.from_torch(module).backward(x[:16].numpy(), dy[:16].numpy())
    weights_only = {k: v for k, v in want.items() if k != "x"}
    assert worst_ratio(lost, weights_only, err)[0] > 10.0

    # silu' taken as σ (the z·σ·(1 − σ) term forgotten), in a float32 restatement that is
    # otherwise right — and is within the bound with the right derivative.
    module, gated, x, dy = make_case("swiglu", 33, 171, 17, False)
    state = {k: v.double().numpy() for k, v in module.state_dict().items()}
    _, err = backward_and_bound(state, x.double().numpy(), dy.double().numpy(), "swish", gated)
    want = autograd(copy.deepcopy(module).double(), x.double(), dy.double())
    state32 = {k: v.numpy() for k, v in module.state_dict().items()}
    right = _swiglu_f32(state32, x.numpy(), dy.numpy(), lambda g, s: s * (1 + g * (1 - s)))
    assert worst_ratio(right, {k: want[k] for k in right}, err)[0] <= 1.0
    forgot = _swiglu_f32(state32, x.numpy(), dy.numpy(), lambda g, s: s)
    assert worst_ratio(forgot, {k: want[k] for k in forgot}, err)[0] > 10.0


def test_backward_api(ffn_module):
    block = ffn_module.SwiGLU(8, hidden=16, bias=True)
    x = np.random.default_rng(0).standard_normal((3, 8), dtype=np.float32)
    dy = np.ones((3, 8), np.float32)
    first = block.backward(x, dy)
    assert list(first) == ["x"] + [name for name, _ in block.named_parameters()]
    again = block.backward(x, dy, recompute=True, threads=3)  # fresh zero gradients each call
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    one = block.backward(x[0], dy[0])  # a single token, shape [d]
    assert one["x"].shape == (8,)
    np.testing.assert_array_equal(one["x"], block.backward(x[:1], dy[:1])["x"][0])
    with pytest.raises(ffn_module.Error, match="dy must have the shape of x"):
        block.backward(x, dy[:2])
    with pytest.raises(ffn_module.Error, match="9 features"):
        block.backward(np.zeros((3, 9), np.float32), np.zeros((3, 9), np.float32))
