"""ffn's codecs of ggml's stored types (ffn.dequantize / ffn.quantize) against gguf-py, llama.cpp's
own NumPy implementation of them (the pinned `gguf` of tests/requirements.txt), as an oracle
independent of ffn's C++: dequantisation bit for bit on random well-formed blocks of every type,
quantisation byte for byte for the types whose quantiser gguf-py implements."""
import importlib.metadata

import gguf  # required: the oracle
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

GGUF = f"gguf-py {getattr(gguf, '__version__', None) or importlib.metadata.version('gguf')}"

# ffn's name → (gguf's type, values per block, bytes per block, byte offsets of the block's
# binary16 fields: scales d / dmin / m, as ggml-common.h lays the blocks out).
TYPES = {
    "f32": (T.F32, 1, 4, ()),
    "f16": (T.F16, 1, 2, (0,)),
    "bf16": (T.BF16, 1, 2, ()),
    "q8_0": (T.Q8_0, 32, 34, (0,)),
    "q4_0": (T.Q4_0, 32, 18, (0,)),
    "q4_1": (T.Q4_1, 32, 20, (0, 2)),
    "q5_0": (T.Q5_0, 32, 22, (0,)),
    "q5_1": (T.Q5_1, 32, 24, (0, 2)),
    "iq4_nl": (T.IQ4_NL, 32, 18, (0,)),
    "q2_k": (T.Q2_K, 256, 84, (80, 82)),
    "q3_k": (T.Q3_K, 256, 110, (108,)),
    "q4_k": (T.Q4_K, 256, 144, (0, 2)),
    "q5_k": (T.Q5_K, 256, 176, (0, 2)),
    "q6_k": (T.Q6_K, 256, 210, (208,)),
    "iq4_xs": (T.IQ4_XS, 256, 136, (0,)),
    "mxfp4": (T.MXFP4, 32, 17, ()),  # the e8m0 byte left random: every scale 2⁻¹²⁸ … 2¹²⁷ occurs
    "tq1_0": (T.TQ1_0, 256, 54, (52,)),
    "tq2_0": (T.TQ2_0, 256, 66, (64,)),
}
# The quantisers gguf-py has (gguf/quants.py: quantize_blocks, ggml's reference quantisers restated
# in NumPy; F32 / F16 by NumPy's astype).
QUANTISED_BY_GGUF = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "mxfp4", "tq1_0", "tq2_0"]


def test_every_ffn_type_is_compared(ffn_module):
    assert set(ffn_module.QUANT_TYPES) == set(TYPES), GGUF


def random_f16(rng, size):
    """Finite binary16 values of moderate size, sign random, magnitudes spread over 2⁻²⁰ … 2⁴
    (subnormals included)."""
    v = rng.standard_normal(size) * np.exp2(rng.uniform(-20, 4, size))
    return v.astype(np.float16)


def random_blocks(rng, name, n_blocks):
    """n_blocks random blocks of type `name` as stored bytes [n_blocks, bytes per block]: random
    bytes with the binary16 fields replaced by finite moderate values."""
    _, _, nbytes, f16_offsets = TYPES[name]
    raw = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
    for off in f16_offsets:
        raw[:, off:off + 2] = random_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    if name == "f32":  # any bit pattern but NaN / Inf
        v = raw.view(np.uint32)
        v[(v & 0x7F800000) == 0x7F800000] &= 0xBFFFFFFF
    if name == "bf16":
        v = raw.view(np.uint16)
        v[(v & 0x7F80) == 0x7F80] &= 0xBFFF
    return raw


# gguf-py warns of the overflow of MXFP4's largest scales (12·2¹²⁷ is +Inf in both codecs).
@pytest.mark.filterwarnings("ignore:overflow encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("name", list(TYPES))
def test_dequantize_matches_gguf_bit_for_bit(ffn_module, name):
    qtype, values, _, _ = TYPES[name]
    rng = np.random.default_rng(list(TYPES).index(name))
    n_blocks = max(64, 4096 // values)
    for trial in range(8):
        raw = random_blocks(rng, name, n_blocks)
        want = gguf.quants.dequantize(raw, qtype).reshape(-1).astype(np.float32)
        got = ffn_module.dequantize(raw, name, n_blocks * values)
        assert got.dtype == np.float32 and got.shape == want.shape, (GGUF, name, got.shape, want.shape)
        diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert diff.size == 0, (f"{name} trial {trial} vs {GGUF}: {diff.size} values differ, first at {diff[:5]}: "
                                f"ffn {got[diff[:5]]} gguf {want[diff[:5]]}")
    # bytes work as well as a uint8 array
    raw = random_blocks(rng, name, 2)
    assert np.array_equal(ffn_module.dequantize(raw.tobytes(), name, 2 * values).view(np.uint32),
                          ffn_module.dequantize(raw, name, 2 * values).view(np.uint32)), GGUF


def random_rows(rng, n):
    """Rows of n float32 values of the kinds quantisers meet: normal and uniform at scales
    1e-4 … 1e3, heavy-tailed, sparse (zeros and all-zero blocks), constant, tiny (near binary16's
    subnormals), off-centre, and coarse grids with many exact ties."""
    rows = []
    for scale in (1e-4, 1e-2, 1.0, 30.0, 1e3):
        rows.append(rng.standard_normal(n) * scale)
        rows.append(rng.uniform(-scale, scale, n))
    rows.append(np.clip(rng.standard_t(1.5, n), -1e4, 1e4) * 0.01)
    sparse = rng.standard_normal(n) * (rng.random(n) < 0.3)
    sparse[32:96] = 0
    rows.append(sparse)
    rows.append(np.full(n, 0.37))
    rows.append(np.full(n, -2.5))
    rows.append(np.zeros(n))
    rows.append(rng.standard_normal(n) * 2.0**-20)
    rows.append(rng.standard_normal(n) * 2.0**-14)
    rows.append(rng.standard_normal(n) + 5.0)
    rows.append(-np.abs(rng.standard_normal(n)))
    rows.append(np.round(rng.uniform(-8, 8, n)) / 4)
    rows.append(np.round(rng.uniform(-8, 8, n)) / 16 + 0.25)
    return np.array(rows, dtype=np.float32)


@pytest.mark.parametrize("name", QUANTISED_BY_GGUF)
def test_quantize_matches_gguf_byte_for_byte(ffn_module, name):
    qtype = TYPES[name][0]
    rng = np.random.default_rng(7 + QUANTISED_BY_GGUF.index(name))
    for trial in range(10):
        x = random_rows(rng, 1024)
        want = gguf.quants.quantize(x, qtype).view(np.uint8).reshape(x.shape[0], -1)
        got = ffn_module.quantize(x, name)
        assert got.dtype == np.uint8 and got.shape == want.shape, (GGUF, name, got.shape, want.shape)
        bad_rows = np.flatnonzero((got != want).any(axis=1))
        assert bad_rows.size == 0, f"{name} trial {trial} vs {GGUF}: rows {bad_rows} differ"
        # a 1-D x is one row
        assert np.array_equal(ffn_module.quantize(x[3], name), want[3]), (GGUF, name)


@pytest.mark.parametrize("name", [n for n in TYPES if n not in QUANTISED_BY_GGUF])
def test_quantize_round_trips_through_gguf_dequantize(ffn_module, name):
    """For the types gguf-py cannot quantise: ffn's bytes decode in gguf-py to ffn's own decoding,
    and, for the N(0, 1) and U(−1, 1) rows, close to x (the unit tests bound each type's error;
    0.4 is above Q2_K's, the coarsest)."""
    qtype, values, _, _ = TYPES[name]
    x = random_rows(np.random.default_rng(11), 1024)
    raw = ffn_module.quantize(x, name)
    want = gguf.quants.dequantize(raw, qtype).astype(np.float32)
    got = np.stack([ffn_module.dequantize(r, name, 1024) for r in raw])
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (GGUF, name)
    unit = x[4:6].astype(np.float64)  # random_rows: the normal and uniform rows of scale 1
    rel = np.sqrt(((got[4:6] - unit) ** 2).sum(axis=1) / (unit**2).sum(axis=1))
    assert np.all(rel < 0.4), (GGUF, name, rel)


def test_hostile_input_is_an_ffn_error(ffn_module):
    ffn = ffn_module
    x = np.ones(512, dtype=np.float32)
    x[300] = np.nan
    with pytest.raises(ffn.Error, match="element 300"):
        ffn.quantize(x, "q4_k")
    with pytest.raises(ffn.Error, match="n = 100"):
        ffn.quantize(np.ones(100, dtype=np.float32), "q6_k")
    with pytest.raises(ffn.Error, match="unknown type 'q7_k'.*q4_k"):
        ffn.quantize(np.ones(256, dtype=np.float32), "q7_k")
    with pytest.raises(ffn.Error, match="take 144 bytes, raw has 143"):
        ffn.dequantize(bytes(143), "q4_k", 256)
    with pytest.raises(ffn.Error, match="unsigned bytes"):
        ffn.dequantize(np.zeros(36, dtype=np.float32), "q4_k", 256)
    with pytest.raises(ffn.Error, match="blocks of 32"):
        ffn.dequantize(bytes(34), "q8_0", 31)
