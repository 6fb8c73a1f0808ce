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
LIPSCHITZ = 1.13  # >= max |act'| for every activation here (GELU: 1.129, Swish: 1.100)

_erfc = np.vectorize(math.erfc)

ACTIVATIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "gelu": lambda z: 0.5 * z * _erfc(-z / math.sqrt(2.0)),
    "gelu_tanh": lambda z: 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3))),
    "swish": lambda z: z / (1.0 + np.exp(-z)),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "identity": lambda z: z,
}


def _linear(x, w, b):
    y = x @ w.T
    a = np.abs(x) @ np.abs(w).T
    if b is not None:
        y, a = y + b, a + np.abs(b)
    return y, a


def forward_and_bound(state, x, activation, gated, operand_rounding=0.0):
    """state: name -> float64 array (gate/up/down .weight/.bias); x: [T, d] float64.
    operand_rounding: relative rounding of the products' activation operands (x, and h
    before the down projection) — 2**-8 for packed bf16 blocks on avx512_bf16, whose dot
    products take bf16 activations (reference.cpp derives the terms).
    Returns (y_exact, bound), both [T, d]."""
    d = x.shape[1]
    hidden = state["up.weight"].shape[0]
    up, up_abs = _linear(x, state["up.weight"], state.get("up.bias"))
    if gated:
        pre, pre_abs = _linear(x, state["gate.weight"], state.get("gate.bias"))
    else:
        pre, pre_abs = up, up_abs
    a = ACTIVATIONS[activation](pre)
    per_term = (d + 1) * U + operand_rounding  # of the sum of |terms|
    e_pre = per_term * pre_abs
    e_a = LIPSCHITZ * e_pre + 8 * U * (np.abs(a) + np.abs(pre))
    if gated:
        h = a * up
        e_h = e_a * np.abs(up) + np.abs(a) * per_term * up_abs + U * np.abs(h)
    else:
        h, e_h = a, e_a
    e_h = e_h + operand_rounding * np.abs(h)
    wd, bd = state["down.weight"], state.get("down.bias")
    y = h @ wd.T + (bd if bd is not None else 0.0)
    magnitude = np.abs(h) @ np.abs(wd).T + (np.abs(bd) if bd is not None else 0.0)
    bound = 2.0 * (e_h @ np.abs(wd).T + (hidden + 1) * U * magnitude) + 2.0**-126
    return y, bound
