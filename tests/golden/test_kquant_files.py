"""GGUF files in llama.cpp's K-quant mixes, written and read with llama.cpp's own Python
package `gguf` (gguf-py, the version in tests/requirements.txt) as the oracle:

* a llama-architecture file (a 32,000-entry tokenizer, token embedding, attention and norm
  tensors beside the MLP) in the MLP rules of Q4_K_M, Q5_K_M and Q6_K, written by gguf-py's
  GGUFWriter with ffn-quantised MLP tensors: every layer through `ffn forward` and `ffn.load`
  gives the answer of the weights as gguf-py dequantises them (PyTorch-free float64
  reference of bound.py) within the contract — the f32 bound plus the q8_K activation term;
* `ffn quantize --type q4_k_m|q5_k_m|q3_k_m|q2_k` writes each tensor in the type llama.cpp's
  rule gives its layer (the rule restated here), GGUFReader reads every file, and gguf-py's
  dequantisation of every tensor equals ffn's bit for bit and the weights ffn loads.
"""
import importlib.metadata
import json

import numpy as np
import pytest
import torch

import bound
import files
import seeds

gguf = pytest.importorskip("gguf", reason="gguf-py missing: run the tests with scripts/python-env.sh's Python")
GGUF_VERSION = "gguf-py " + importlib.metadata.version("gguf")
Q = gguf.GGMLQuantizationType

D, HIDDEN, LAYERS = 256, 512, 8


def use_more_bits(i, n):
    """llama.cpp's rule: the first and last eighth of the layers, every third in between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


# The MLP part of llama.cpp's llama_tensor_get_type for dense llama models (no imatrix):
# (gate and up, down) of layer i of n.
MIXES = {
    "q4_k_m": lambda i, n: ("q4_K", "q6_K" if use_more_bits(i, n) else "q4_K"),
    "q5_k_m": lambda i, n: ("q5_K", "q6_K" if use_more_bits(i, n) else "q5_K"),
    "q6_k": lambda i, n: ("q6_K", "q6_K"),
    "q4_k_s": lambda i, n: ("q4_K", "q5_K" if i < n // 8 else "q4_K"),
    "q3_k_m": lambda i, n: ("q3_K", "q5_K" if i < n // 16 else "q4_K"),
    "q2_k": lambda i, n: ("q2_K", "q3_K"),
}
# Files in one type throughout: the codebook types (the IQ4_NL / IQ4_XS / MXFP4 tensors
# llama.cpp's IQ4 mixes and gpt-oss's experts store), the ternary types of BitNet b1.58's
# files, and mixed with a K-quant down.
ONE_TYPE = {
    "iq4_nl": lambda i, n: ("iq4_nl", "iq4_nl"),
    "iq4_xs": lambda i, n: ("iq4_xs", "iq4_xs"),
    "mxfp4": lambda i, n: ("mxfp4", "mxfp4"),
    "tq1_0": lambda i, n: ("tq1_0", "tq1_0"),
    "tq2_0": lambda i, n: ("tq2_0", "tq2_0"),
    "iq4_xs+q6_K": lambda i, n: ("iq4_xs", "q6_K"),
    "mxfp4+iq4_nl": lambda i, n: ("mxfp4", "iq4_nl"),
}
MIXES.update(ONE_TYPE)


def ggml_type(name):
    return Q[name.upper()]


def block_of(name):
    """Values a block of weight type `name`: the block of the activations ffn and ggml dot it
    with (q8_K for 256, q8_0 codes for 32)."""
    return gguf.GGML_QUANT_SIZES[ggml_type(name)][0]


def random_blocks(rng, rows, cols, qtype):
    """Well-formed blocks of any type: random bytes with moderate binary16 scales."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    scale_fields = {Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.Q3_K: [108], Q.Q2_K: [80, 82]}[qtype]
    for f in scale_fields:
        raw[:, :, f:f + 2] = rng.uniform(1e-3, 1e-2, size=(rows, cols // block)).astype(np.float16)[..., None].view(np.uint8)
    return raw.reshape(rows, -1)


def write_llama_file(path, mix, rng):
    """A small llama model as llama.cpp's converter lays it out, its MLP in `mix`'s types.
    Returns the MLP weights as gguf-py dequantises them, per layer."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(LAYERS)
    w.add_context_length(128)
    w.add_embedding_length(D)
    w.add_feed_forward_length(HIDDEN)
    w.add_head_count(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>".encode() for i in range(32000)])
    w.add_token_scores([0.0] * 32000)
    w.add_token_types([1] * 32000)
    w.add_tensor("token_embd.weight", random_blocks(rng, 32000, D, Q.Q4_K), raw_dtype=Q.Q4_K)
    w.add_tensor("output_norm.weight", np.ones(D, dtype=np.float32))
    import ffn
    reference = []
    for i in range(LAYERS):
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{t}.weight", random_blocks(rng, D, D, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(D, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(D, dtype=np.float32))
        gate_up, down = MIXES[mix](i, LAYERS)
        layer = {}
        for name, rows, cols, t in (("gate", HIDDEN, D, gate_up), ("up", HIDDEN, D, gate_up),
                                    ("down", D, HIDDEN, down)):
            x = rng.standard_normal((rows, cols)).astype(np.float32) * 0.05
            raw = ffn.quantize(x, t.lower()).reshape(rows, -1)
            w.add_tensor(f"blk.{i}.ffn_{name}.weight", raw, raw_dtype=ggml_type(t))
            layer[name] = gguf.quants.dequantize(raw, ggml_type(t)).astype(np.float64)
        reference.append(layer)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return reference


def within_contract(y, x, layer, gate_up, down):
    """Largest |y − reference| over the contract's bound (> 1: outside): the f32 bound plus
    the q8_K activation term, a worst case over every sign of the quantisation errors."""
    state = {"gate.weight": layer["gate"], "up.weight": layer["up"], "down.weight": layer["down"]}
    x64 = x.astype(np.float64)
    y_exact, err = bound.forward_and_bound(state, x64, "swish", True)
    dq = bound.quantisation_bound(state, x64, "swish", True, block_of(gate_up), block_of(down))
    excess = np.abs(y.astype(np.float64) - y_exact) / (err + dq)
    return float(excess.max())


def q8_k_values(v):
    """Rows of v as ggml's quantize_row_q8_K_ref leaves them (restated in NumPy, in f32 as ggml
    computes): per block of 256, iscale = −127/max (max: the value of largest magnitude),
    codes round(iscale·v) (ties to even) clamped at 127, values d·code with d = 1/iscale."""
    v = np.asarray(v, dtype=np.float32).reshape(v.shape[0], -1, 256)
    m = np.take_along_axis(v, np.abs(v).argmax(axis=2)[..., None], axis=2)
    iscale = np.float32(-127.0) / np.where(m == 0, np.float32(1), m)
    codes = np.minimum(127, np.rint(iscale * v)).astype(np.float64)
    d = np.where(m == 0, 0.0, (np.float32(1) / iscale).astype(np.float64))
    return (codes * d).reshape(v.shape[0], -1)


def q8_0_values(v):
    """Rows of v as ggml's quantize_row_q8_0_ref leaves them: per block of 32, d = amax/127 in
    f32, codes round(v·(1/d)) (half away from zero, C's roundf), values code·d with d stored
    as binary16."""
    v = np.asarray(v, dtype=np.float32).reshape(v.shape[0], -1, 32)
    d = np.abs(v).max(axis=2, keepdims=True) / np.float32(127)
    inv = np.where(d == 0, np.float32(0), np.float32(1) / np.where(d == 0, np.float32(1), d))
    scaled = v * inv
    codes = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))
    return (codes.astype(np.float64) * d.astype(np.float16).astype(np.float64)).reshape(v.shape[0], -1)


def activation_values(v, weight_type):
    return q8_k_values(v) if block_of(weight_type) == 256 else q8_0_values(v)


def emulated_error(y, x, layer, gate_up="q4_K", down="q4_K"):
    """Relative RMS of y against the forward of the dequantised weights with x and h
    quantised to q8_K (or q8_0 for the 32-block types) as ggml does (float64 otherwise): what llama.cpp's CPU backend computes
    for these types, up to summation order. The worst-case contract above grows with the width
    (Σ|W|·e) and at this size is several times |y| — it would pass another layer's answer —
    so this is the sharp check: f32 rounding gives ~1e-7; a code of h that f32 rounding moves
    across a rounding boundary (it happens, rarely) moves y by ~1e-3 relative; a wrong weight
    layout, scale or layer by 1e-2 to 1 (the activations' own quantisation is 2e-2 here)."""
    x8 = activation_values(x, gate_up)
    g, u = x8 @ layer["gate"].T, x8 @ layer["up"].T
    y_ref = activation_values(g / (1.0 + np.exp(-g)) * u, down) @ layer["down"].T
    return float(np.sqrt(np.mean((y - y_ref) ** 2) / np.mean(y_ref**2)))


EMULATED_ERROR = 3e-3  # relative RMS: room for two or three boundary codes, far below any mistake


@pytest.mark.parametrize("mix", ["q4_k_m", "q5_k_m", "q6_k", *ONE_TYPE])
def test_llama_file_in_a_k_quant_mix_runs_every_layer(tmp_path, run_ffn, ffn_module, mix):
    rng = np.random.default_rng(1)
    path = tmp_path / f"llama-{mix}.gguf"
    reference = write_llama_file(path, mix, rng)
    reader = gguf.GGUFReader(str(path))
    assert len(reader.fields["tokenizer.ggml.tokens"].data) == 32000
    info = json.loads(run_ffn("info", "--weights", path, "--json").stdout)
    assert [(l["matrices"]["gate"]["type"], l["matrices"]["down"]["type"]) for l in info["layers"]] == \
        [MIXES[mix](i, LAYERS) for i in range(LAYERS)]
    size = lambda t: D * HIDDEN // gguf.GGML_QUANT_SIZES[ggml_type(t)][0] * gguf.GGML_QUANT_SIZES[ggml_type(t)][1]
    assert all(l["matrices"]["down"]["bytes"] == size(l["matrices"]["down"]["type"]) for l in info["layers"])
    x = rng.standard_normal((5, D)).astype(np.float32)
    files.write_npy(tmp_path / "x.npy", x)
    for i in range(LAYERS):
        gate_up, down = MIXES[mix](i, LAYERS)
        said = run_ffn("forward", "--weights", path, "--layer", i, "--input", tmp_path / "x.npy",
                       "--output", tmp_path / "y.npy").stdout
        want = gate_up if gate_up == down else f"gate {gate_up}, up {gate_up}, down {down}"
        assert f"weights {want}" in said, said
        y_cli = np.load(tmp_path / "y.npy")
        ratio = within_contract(y_cli, x, reference[i], gate_up, down)
        assert ratio <= 1.0, f"{GGUF_VERSION}: {mix} layer {i} ({gate_up}/{down}): {ratio:.3g} of the bound"
        rel = emulated_error(y_cli, x, reference[i], gate_up, down)
        assert rel <= EMULATED_ERROR, f"{GGUF_VERSION}: {mix} layer {i}: {rel:.3g} off the emulated q8_K forward"
        y_py = ffn_module.load(path, layer=i)(x)
        np.testing.assert_array_equal(y_py, y_cli, err_msg=f"{mix} layer {i}: ffn.load against ffn forward")


def test_the_emulated_check_sees_a_wrong_layer(tmp_path, run_ffn):
    """Another layer's weights are far outside the emulated check (the worst-case bound is
    not: see emulated_error)."""
    rng = np.random.default_rng(2)
    path = tmp_path / "llama-q4_k_m.gguf"
    reference = write_llama_file(path, "q4_k_m", rng)
    x = rng.standard_normal((3, D)).astype(np.float32)
    files.write_npy(tmp_path / "x.npy", x)
    run_ffn("forward", "--weights", path, "--layer", 1, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    y = np.load(tmp_path / "y.npy")
    assert within_contract(y, x, reference[1], "q4_K", "q4_K") <= 1.0
    assert emulated_error(y, x, reference[1]) <= EMULATED_ERROR
    assert emulated_error(y, x, reference[2]) > 100 * EMULATED_ERROR


def safetensors_model(tmp_path, layers):
    torch.manual_seed(4)
    blocks = [seeds.SwiGLU(D, hidden=HIDDEN) for _ in range(layers)]
    tensors = {f"model.layers.{n}.mlp.{k.split('.')[0]}_proj.weight": v
               for n, m in enumerate(blocks) for k, v in m.state_dict().items()}
    files.write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({"hidden_act": "silu"}))
    return tmp_path / "model.safetensors", blocks


@pytest.mark.parametrize("mix", ["q4_k_m", "q5_k_m", "q4_k_s", "q3_k_m", "q2_k", "iq4_nl", "iq4_xs", "mxfp4", "tq1_0",
                                 "tq2_0"])
def test_quantize_writes_llama_cpp_s_mix_that_gguf_py_reads(tmp_path, run_ffn, ffn_module, mix):
    src, blocks = safetensors_model(tmp_path, LAYERS)
    out = tmp_path / f"mlp-{mix}.gguf"
    report = run_ffn("quantize", src, out, "--type", mix, "--all-layers").stdout
    reader = gguf.GGUFReader(str(out))
    by_name = {t.name: t for t in reader.tensors}
    for i in range(LAYERS):
        gate_up, down = MIXES[mix](i, LAYERS)
        trainable = ffn_module.load_trainable(out, layer=i)
        params = dict(trainable.named_parameters())
        for matrix, t in (("gate", gate_up), ("up", gate_up), ("down", down)):
            name = f"blk.{i}.ffn_{matrix}.weight"
            tensor = by_name[name]
            assert tensor.tensor_type == ggml_type(t), f"{GGUF_VERSION}: {name} is {tensor.tensor_type.name}, want {t}"
            assert any(name in line and f" {t} " in line for line in report.splitlines()), report
            theirs = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            ours = ffn_module.dequantize(np.asarray(tensor.data).tobytes(), t.lower(), theirs.size).reshape(theirs.shape)
            assert np.array_equal(theirs.view(np.uint32), ours.view(np.uint32)), f"{GGUF_VERSION}: {name}"
            assert np.array_equal(params[f"{matrix}.weight"], theirs), f"{name}: ffn's loaded weights"
            original = blocks[i].state_dict()[f"{matrix}.weight"].numpy()
            rel = np.sqrt(np.mean((theirs - original) ** 2) / np.mean(original**2))
            # Each type's relative RMS error on N(0, 1) rows (test_ggml_blocks.cpp) with margin. The
            # ternary types round such rows to d·{-1, 0, 1}, d the block's largest |x|: 0.81 (measured
            # on N(0, 1) rows of 512) — BitNet b1.58's weights are trained ternary, these are not.
            assert rel < {"q6_K": 0.03, "q5_K": 0.05, "q4_K": 0.1, "q3_K": 0.2, "q2_K": 0.4, "iq4_nl": 0.1,
                          "iq4_xs": 0.1, "mxfp4": 0.15, "tq1_0": 0.85, "tq2_0": 0.85}[t], (name, rel)
    if mix in ("q4_k_m", "q5_k_m"):
        assert "use_more_bits(layer 0 of 8)" in report, report


def test_quantize_type_per_matrix_and_bad_types(tmp_path, run_ffn):
    src, _ = safetensors_model(tmp_path, 1)
    out = tmp_path / "mlp.gguf"
    run_ffn("quantize", src, out, "--type", "q4_K:q5_K:q6_K")
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(str(out)).tensors}
    assert types["blk.0.ffn_gate.weight"] == Q.Q4_K and types["blk.0.ffn_up.weight"] == Q.Q5_K
    assert types["blk.0.ffn_down.weight"] == Q.Q6_K
    p = run_ffn("quantize", src, out, "--type", "q4_K:q6_K", check=False)
    assert p.returncode != 0 and "gate:up:down" in p.stderr
    p = run_ffn("quantize", src, out, "--type", "iq2_xxs", check=False)
    assert p.returncode != 0 and "iq2_xxs" in p.stderr and "q4_K" in p.stderr


def test_hostile_k_quant_files_are_errors_naming_the_tensor(tmp_path, run_ffn):
    """A 3-D tensor where a matrix is expected, a file cut inside a super-block, and a NaN
    block scale: each an error naming the tensor and the rule, never a crash or NaN output."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, D)).astype(np.float32)
    files.write_npy(tmp_path / "x.npy", x)

    def write(path, up_raw, up_shape=None):
        w = gguf.GGUFWriter(str(path), "llama")
        w.add_tensor("blk.0.ffn_gate.weight", random_blocks(rng, HIDDEN, D, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor("blk.0.ffn_up.weight", up_raw, raw_shape=up_shape, raw_dtype=Q.Q4_K)
        w.add_tensor("blk.0.ffn_down.weight", random_blocks(rng, D, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    def forward(path):
        return run_ffn("forward", "--weights", path, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy",
                       check=False)

    up = random_blocks(rng, HIDDEN, D, Q.Q4_K)
    write(tmp_path / "three_d.gguf", up, up_shape=(1, HIDDEN, up.shape[1]))  # gguf-py: outermost first, in bytes
    p = forward(tmp_path / "three_d.gguf")
    assert p.returncode == 1 and "blk.0.ffn_up.weight" in p.stderr and "2 dimensions" in p.stderr, p.stderr

    write(tmp_path / "whole.gguf", up)
    data = (tmp_path / "whole.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:len(data) - 144 * 40 - 70])  # inside a super-block of down
    p = forward(tmp_path / "cut.gguf")
    assert p.returncode == 1 and "blk.0.ffn_down.weight" in p.stderr and "outside" in p.stderr, p.stderr

    bad = up.copy()
    bad[7, 0:2] = np.array([np.nan], dtype=np.float16).view(np.uint8)  # row 7, its one block: d = NaN
    write(tmp_path / "nan.gguf", bad)
    p = forward(tmp_path / "nan.gguf")
    assert p.returncode == 1 and "blk.0.ffn_up.weight" in p.stderr and "row 7, block 0" in p.stderr, p.stderr
    assert "NaN" in p.stderr


def test_mxfp4_nan_scale_is_an_error_naming_the_tensor(tmp_path, run_ffn):
    """e8m0's 0xff is NaN in the OCP format (ggml would read it as 2^127): refused at load."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, D)).astype(np.float32)
    files.write_npy(tmp_path / "x.npy", x)
    import ffn
    raw = {n: ffn.quantize(rng.standard_normal((r, c)).astype(np.float32), "mxfp4")
           for n, r, c in (("gate", HIDDEN, D), ("up", HIDDEN, D), ("down", D, HIDDEN))}
    raw["down"][3, 17 * 2] = 0xFF  # row 3, block 2: e = 0xff
    path = tmp_path / "nan.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for n, r in raw.items():
        w.add_tensor(f"blk.0.ffn_{n}.weight", r, raw_dtype=Q.MXFP4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    p = run_ffn("forward", "--weights", path, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy",
                check=False)
    assert p.returncode == 1 and "blk.0.ffn_down.weight" in p.stderr and "row 3, block 2" in p.stderr, p.stderr
    assert "NaN" in p.stderr and "e8m0" in p.stderr, p.stderr
