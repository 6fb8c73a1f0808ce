"""ggml's reference quantisers (quantize_row_q8_0_ref, quantize_row_q4_0_ref) restated in
NumPy float32 arithmetic, to check ffn's q8_0/q4_0 weights independently of its C++ code.
C's roundf rounds halves away from zero (NumPy's round does not), and the f16 scale is the
nearest binary16 of d, while the quantiser divides by the unrounded d."""
import numpy as np


def _roundf(v):
    return np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))


def q8_0_roundtrip(w):
    """w: float32 [rows, n], n % 32 == 0 → the f32 values a q8_0 tensor of w holds."""
    b = w.astype(np.float32).reshape(-1, 32)
    amax = np.abs(b).max(axis=1, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _roundf((b * inv).astype(np.float32)).astype(np.int8)
    d16 = d.astype(np.float16).astype(np.float32)
    return (q.astype(np.float32) * d16).astype(np.float32).reshape(w.shape)


def q4_0_roundtrip(w):
    b = w.astype(np.float32).reshape(-1, 32)
    first_max = np.argmax(np.abs(b), axis=1)  # the first element of largest magnitude, with its sign
    mx = b[np.arange(b.shape[0]), first_max][:, None]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.minimum(np.float32(15), np.trunc((b * inv + np.float32(8.5)).astype(np.float32)))
    d16 = d.astype(np.float16).astype(np.float32)
    return ((q - np.float32(8)) * d16).astype(np.float32).reshape(w.shape)
