"""The rigorous f32 error bound of a block's forward, computed in float64 from the weights
(the same derivation as src/block/reference.cpp, written again here in NumPy).

Any f32 implementation that sums each dot product of n terms with error <= n*u*sum|terms|
(u = 2**-24, true of every summation order, PyTorch's included) and evaluates the activation
within a few ulps stays within it. It is about 2*(d+hidden)*u of the magnitude
sum|W_down*h| per output: a wrong activation, operand, index or bias exceeds it by orders
of magnitude.
"""
import math

import numpy as np

U = 2.0**-24
LIPSCHITZ = 1.13  # >= max |act'| for every activation here but relu2 (GELU: 1.129, Swish, quick_gelu and
                  # clamped_swish: 1.100, relu6: 1); relu2's slope 2*relu(z) is unbounded: see lipschitz()
OAI_LIMIT, OAI_ALPHA = 7.0, 1.702  # gpt-oss's swiglu_limit and alpha, fixed in clamped_swish (quick_gelu's alpha)
RELU6_LIMIT = 6.0


def lipschitz(activation, z, e):
    """max |act'| over [z - e, z + e]: LIPSCHITZ, or relu2's 2*(|z| + e)."""
    return 2.0 * (np.abs(z) + e) if activation == "relu2" else LIPSCHITZ


def magnitude(activation, z):
    """A bound on |act(z)|: max(|z|, 1), or relu2's z**2."""
    return z * z if activation == "relu2" else np.maximum(np.abs(z), 1.0)


_erfc = np.vectorize(math.erfc)

ACTIVATIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "gelu": lambda z: 0.5 * z * _erfc(-z / math.sqrt(2.0)),
    "gelu_tanh": lambda z: 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3))),
    "swish": lambda z: z / (1.0 + np.exp(-z)),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "identity": lambda z: z,
    # gpt-oss's gate: m * sigmoid(1.702 m), m = min(z, 7) (gated blocks only; see up_factor)
    "clamped_swish": lambda z: np.minimum(z, OAI_LIMIT) / (1.0 + np.exp(-OAI_ALPHA * np.minimum(z, OAI_LIMIT))),
    # transformers' QuickGELUActivation, ReLUSquaredActivation and torch's ReLU6
    "quick_gelu": lambda z: z / (1.0 + np.exp(-OAI_ALPHA * z)),
    "relu2": lambda z: np.maximum(z, 0.0) ** 2,
    "relu6": lambda z: np.clip(z, 0.0, RELU6_LIMIT),
}


def up_factor(activation, up):
    """What a gated block multiplies act(gate) by: up, or clamped_swish's clip(up, -7, 7) + 1."""
    if activation == "clamped_swish":
        return np.clip(up, -OAI_LIMIT, OAI_LIMIT) + 1.0
    return up


def _linear(x, w, b):
    y = x @ w.T
    a = np.abs(x) @ np.abs(w).T
    if b is not None:
        y, a = y + b, a + np.abs(b)
    return y, a


def normal_quantile(s):
    """Φ⁻¹(s) to double precision: bisection on Φ(x) = erfc(−x/√2)/2 (slow, plainly right)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 0.5 * math.erfc(-mid / math.sqrt(2.0)) < s:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def gaussian_top_k(pre, e_pre, sparsity):
    """Gemma 3n's top-k on the gate (Gemma3nTextMLP._gaussian_topk) per row of pre [T, H]:
    relu(g − (mean + std·Φ⁻¹(s))), std biased; with e_pre's bound grown by the cutoff's error
    (the terms of src/block/reference.cpp's derivation)."""
    n = pre.shape[1]
    m = normal_quantile(sparsity)
    mean = pre.mean(axis=1, keepdims=True)
    sigma = np.sqrt(((pre - mean) ** 2).mean(axis=1, keepdims=True))
    cutoff = mean + sigma * m
    e_mean = e_pre.mean(axis=1, keepdims=True) + (n + 1) * U * np.abs(pre).mean(axis=1, keepdims=True)
    e_var = 4.0 * (n + 3) * U * (pre**2).mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        e_sqrt = np.where(sigma > 0, np.minimum(e_var / np.where(sigma > 0, sigma, 1.0), np.sqrt(e_var)), np.sqrt(e_var))
    e_sigma = np.sqrt((e_pre**2).mean(axis=1, keepdims=True)) + e_sqrt + U * sigma
    density = math.exp(-0.5 * m * m) / math.sqrt(2.0 * math.pi)
    e_m = 2.0 * U / density + 8.0 * U * abs(m)
    e_cut = e_mean + abs(m) * e_sigma + sigma * e_m + 2.0 * U * (np.abs(mean) + np.abs(sigma * m))
    shifted = pre - cutoff
    return np.maximum(shifted, 0.0), e_pre + e_cut + U * np.abs(shifted)


def forward_and_bound(state, x, activation, gated, operand_rounding=0.0, gate_sparsity=0.0, x_up=None):
    """state: name -> float64 array (gate/up/down .weight/.bias); x: [T, d] float64.
    operand_rounding: relative rounding of the products' activation operands (x, and h
    before the down projection) — 2**-8 for packed bf16 blocks on avx512_bf16, whose dot
    products take bf16 activations (reference.cpp derives the terms).
    gate_sparsity: Gemma 3n's Gaussian top-k on the gate (BlockConfig::gate_sparsity); 0: none.
    x_up: the activations up's products take where they are not x (sparse decode's q8_0 up
    rows take x in q8_0: pass its values, and the bound is the f32 bound of those products).
    Returns (y_exact, bound), both [T, d]."""
    d = x.shape[1]
    hidden = state["up.weight"].shape[0]
    up, up_abs = _linear(x if x_up is None else x_up, state["up.weight"], state.get("up.bias"))
    if gated:
        pre, pre_abs = _linear(x, state["gate.weight"], state.get("gate.bias"))
    else:
        pre, pre_abs = up, up_abs
    per_term = (d + 1) * U + operand_rounding  # of the sum of |terms|
    e_pre = per_term * pre_abs
    if gate_sparsity > 0.0:
        pre, e_pre = gaussian_top_k(pre, e_pre, gate_sparsity)
    a = ACTIVATIONS[activation](pre)
    e_a = lipschitz(activation, pre, e_pre) * e_pre + 8 * U * (np.abs(a) + np.abs(pre))
    if gated:
        # clamped_swish: v = clip(up) + 1 is 1-Lipschitz in up and its + 1 rounds once.
        v = up_factor(activation, up)
        e_v = per_term * up_abs + (U * np.abs(v) if activation == "clamped_swish" else 0.0)
        h = a * v
        e_h = e_a * np.abs(v) + np.abs(a) * e_v + U * np.abs(h)
    else:
        h, e_h = a, e_a
    e_h = e_h + operand_rounding * np.abs(h)
    wd, bd = state["down.weight"], state.get("down.bias")
    y = h @ wd.T + (bd if bd is not None else 0.0)
    magnitude = np.abs(h) @ np.abs(wd).T + (np.abs(bd) if bd is not None else 0.0)
    bound = 2.0 * (e_h @ np.abs(wd).T + (hidden + 1) * U * magnitude) + 2.0**-126
    return y, bound


def _q8_errors(v, block):
    """Per-value error of quantising the rows of v to int8 blocks of `block` values: half a
    step of the block's grid (largest magnitude a / 254), plus its scale's rounding — binary16
    for q8_0 (blocks of 32: relative 2**-11, absolute 2**-25 when subnormal), f32 for q8_K
    (blocks of 256) — with margin."""
    rows, n = v.shape
    a = np.abs(v).reshape(rows, n // block, block).max(axis=2, keepdims=True)
    if block == 256:
        e = a / 254.0 + a * 2.0**-20
    else:
        e = a / 254.0 + 127.0 * np.maximum(a / 127.0 * 2.0**-11, 2.0**-25) + a * 2.0**-20
    return np.broadcast_to(e, (rows, n // block, block)).reshape(rows, n)


def quantisation_bound(state, x, activation, gated, x_block, h_block):
    """The integer types' extra term (the C++ contract of test_inference_types.cpp, restated):
    x is quantised in blocks of x_block (32: q8_0, 256: q8_K) and h in blocks of h_block; the
    errors e are propagated through the weights' magnitudes:
      δu = |W_up|·e_x, δg likewise;  δh = L·δg·(|u| + δu) + max(|g|, 1)·δu (gated), L·δu
      (relu2: L = 2·(|g| + δg), g² for max(|g|, 1));
      δy = |W_down|·(δh + e_h(|h| + δh))."""
    ex = _q8_errors(x, x_block)
    up, _ = _linear(x, state["up.weight"], state.get("up.bias"))
    du = ex @ np.abs(state["up.weight"]).T
    if gated:
        g, _ = _linear(x, state["gate.weight"], state.get("gate.bias"))
        dg = ex @ np.abs(state["gate.weight"]).T
        v = up_factor(activation, up)  # 1-Lipschitz in up: its error is within du too
        h = ACTIVATIONS[activation](g) * v
        dh = lipschitz(activation, g, dg) * dg * (np.abs(v) + du) + magnitude(activation, g) * du
    else:
        h = ACTIVATIONS[activation](up)
        dh = lipschitz(activation, up, du) * du
    eh = _q8_errors(np.abs(h) + dh, h_block)
    return (dh + eh) @ np.abs(state["down.weight"]).T
