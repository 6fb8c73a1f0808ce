"""Activation-sparse decode through the CLI and Python, on checkpoints written here:

- a ReGLU block (Hugging Face names, hidden_act relu): the loader turns exact sparse decode on
  by itself, says so, and one token at a time matches torch's ReGLU module within the f32
  bound (bound.py); `--sparse off` too;
- Gemma 3n's sparse layer one token at a time and four at once (the sparse path) and in a
  batch of six (the dense path after the gate), against its module restated from transformers (test_gemma3n.py);
- `ffn forward --calibrate-sparsity S` on a SwiGLU block writes ffn-sparsity.json beside the
  checkpoint with the threshold torch's own activations give (the ⌈S·n⌉-th smallest |silu(g)|),
  and `--sparse calibrated` then equals torch's module with exactly the channels below it
  dropped, within the bound of the block of the kept channels; ffn.load(sparse=threshold)
  agrees bit for bit with the CLI;
- a Gemma 3n GGUF with q4_0 up and down decodes sparse on q8_0 copies of them, made here
  independently by the gguf package;
- bad values refused by name; `ffn bench --sparsity` writes its rows.
Tolerances: bound.py's rigorous f32 bound (about 2·(d + hidden)·u of the magnitude).
"""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import bound
import files
from test_gemma3n import D as GD, exact_and_bound, gemma3n_config, layer_weights, module_output, write_checkpoint

D, H = 64, 192


def weights(seed, gated=True):
    g = torch.Generator().manual_seed(seed)
    w = {"up_proj.weight": torch.randn(H, D, generator=g) / D**0.5,
         "down_proj.weight": torch.randn(D, H, generator=g) / H**0.5}
    if gated:
        w["gate_proj.weight"] = torch.randn(H, D, generator=g) / D**0.5
    return w


def write_llama(folder, w, act):
    folder.mkdir(parents=True, exist_ok=True)
    files.write_safetensors(folder / "model.safetensors",
                            {f"model.layers.0.mlp.{k}": v for k, v in w.items()})
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_act": act}))
    return folder


def state_of(w):
    return {k.replace("_proj", ""): v.double().numpy() for k, v in w.items()}


def forward_cli(tmp_path, run_ffn, folder, x, *extra):
    files.write_npy(tmp_path / "x.npy", x)
    out = run_ffn("forward", "--weights", folder, "--layer", 0, "--input", tmp_path / "x.npy", "--output",
                  tmp_path / "y.npy", *extra)
    return np.load(tmp_path / "y.npy"), out.stdout


def ratio(y, y_ref, err):
    return float(np.max(np.abs(np.asarray(y, np.float64) - y_ref) / err))


def test_relu_blocks_decode_sparse_by_themselves(tmp_path, run_ffn, ffn_module):
    w = weights(1)
    folder = write_llama(tmp_path / "reglu", w, "relu")
    x = np.random.default_rng(2).standard_normal((5, D)).astype(np.float32)
    y_ref, err = bound.forward_and_bound(state_of(w), x.astype(np.float64), "relu", True)
    with torch.no_grad():  # torch's ReGLU, as a second opinion of the reference
        t = F.linear(torch.relu(F.linear(torch.tensor(x), w["gate_proj.weight"])) *
                     F.linear(torch.tensor(x), w["up_proj.weight"]), w["down_proj.weight"]).double().numpy()
    assert ratio(t, y_ref, err) <= 1.0
    for t_ in range(5):  # one token a call: the sparse path
        y, out = forward_cli(tmp_path, run_ffn, folder, x[t_:t_ + 1])
        assert "sparse decode: exact zeros skipped" in out
        assert ratio(y, y_ref[t_:t_ + 1], err[t_:t_ + 1]) <= 1.0
    y, out = forward_cli(tmp_path, run_ffn, folder, x[:1], "--sparse", "off")
    assert "sparse decode" not in out
    assert ratio(y, y_ref[:1], err[:1]) <= 1.0
    block = ffn_module.load(str(folder))
    assert block.sparse is not None and block.sparse["threshold"] == 0.0
    assert block.sparse["layout_bytes"] == 2 * H * D * 4  # up and down again, f32
    assert ffn_module.load(str(folder), sparse="off").sparse is None
    # SwiGLU makes no exact zeros: auto leaves it off.
    assert ffn_module.load(str(write_llama(tmp_path / "swiglu", weights(3), "silu"))).sparse is None


def test_gemma3n_sparse_layer_token_by_token_and_batched(tmp_path, run_ffn, ffn_module):
    layers = [layer_weights(seed) for seed in (1, 2)]
    folder = write_checkpoint(tmp_path / "g3n", layers, gemma3n_config())
    x = torch.randn(6, GD, generator=torch.Generator().manual_seed(9))
    y_module = module_output(layers[0], 0.95, x)
    _, err = exact_and_bound(layers[0], x, 0.95)
    block = ffn_module.load(str(folder), layer=0)
    assert block.sparse is not None  # Gemma 3n's sparse layer: on by itself, up to 4 tokens a call
    assert block.sparse["max_tokens"] == 4
    for t in range(4):
        assert ratio(block(x[t:t + 1].numpy()), y_module[t:t + 1], err[t:t + 1]) <= 1.0
    sparse_batch = block(x[:4].numpy())
    assert ratio(sparse_batch, y_module[:4], err[:4]) <= 1.0
    assert np.array_equal(sparse_batch[1], block(x[1:2].numpy())[0])  # a token's bits alone or beside others
    assert ratio(block(x.numpy()), y_module, err) <= 1.0  # 6 tokens: the dense path after the gate
    y, out = forward_cli(tmp_path, run_ffn, folder, x[:1].numpy())
    assert "sparse decode: exact zeros skipped" in out and "gate sparsity 0.95" in out
    assert ratio(y, y_module[:1], err[:1]) <= 1.0


def test_calibrated_threshold_is_written_beside_and_drops_those_channels(tmp_path, run_ffn, ffn_module):
    w = weights(4)
    folder = write_llama(tmp_path / "swiglu", w, "silu")
    rng = np.random.default_rng(5)
    calibration = rng.standard_normal((64, D)).astype(np.float32)
    _, out = forward_cli(tmp_path, run_ffn, folder, calibration, "--calibrate-sparsity", "0.6")
    entry = json.loads((folder / "ffn-sparsity.json").read_text())
    assert entry["format"] == "ffn-sparsity/1"
    layer = entry["layers"]["0"]
    assert layer["target"] == pytest.approx(0.6) and layer["calibration_tokens"] == 64
    # torch's |silu(g)| on the same tokens: the ⌈0.6·n⌉-th smallest (f32 sums differ by ulps).
    with torch.no_grad():
        a = F.silu(F.linear(torch.tensor(calibration), w["gate_proj.weight"])).abs().flatten().sort().values
    k = int(np.ceil(0.6 * a.numel())) - 1
    assert layer["threshold"] == pytest.approx(float(a[k]), rel=1e-5)
    assert "drops 60.0% of hidden channels" in out

    # One token, --sparse calibrated: the block of the channels whose |silu(g)| is above the
    # threshold (decided in float64 here; a channel within 1e-5 of it could go either way, and
    # none does at these values).
    x = rng.standard_normal((1, D)).astype(np.float32)
    y, out = forward_cli(tmp_path, run_ffn, folder, x, "--sparse", "calibrated")
    assert "dropped" in out
    g = x.astype(np.float64) @ w["gate_proj.weight"].double().numpy().T
    act = np.abs(g / (1 + np.exp(-g)))[0]
    assert np.min(np.abs(act - layer["threshold"])) > 1e-5 * layer["threshold"]
    kept = act > layer["threshold"]
    assert 0.2 < kept.mean() < 0.6
    state = state_of(w)
    restricted = {"gate.weight": state["gate.weight"][kept], "up.weight": state["up.weight"][kept],
                  "down.weight": state["down.weight"][:, kept]}
    y_ref, err = bound.forward_and_bound(restricted, x.astype(np.float64), "swish", True)
    assert ratio(y, y_ref, err) <= 1.0
    y_full, _ = bound.forward_and_bound(state, x.astype(np.float64), "swish", True)
    assert ratio(y_full, y_ref, err) > 100.0  # dropping them is visible: the test can fail
    assert np.array_equal(ffn_module.load(str(folder), sparse=layer["threshold"])(x), y)
    # Python's calibration agrees with the CLI's.
    dense = ffn_module.load(str(folder), sparse="off")
    assert ffn_module.sparsity_threshold(dense.hidden_activations(calibration), 0.6) == np.float32(layer["threshold"])


def _gap_threshold(values, lo, hi):
    """A threshold among sorted |values| between the quantiles lo and hi, in the middle of the
    widest gap there (so that float32 and float64 decide every value alike)."""
    m = np.sort(np.abs(values))
    i0, i1 = int(lo * len(m)), int(hi * len(m))
    i = i0 + int(np.argmax(m[i0 + 1:i1 + 1] - m[i0:i1]))
    assert m[i + 1] - m[i] > 1e-4 * m[i + 1]
    return float((m[i] + m[i + 1]) / 2)


def test_down_threshold_leaves_small_hidden_values_out_of_down(tmp_path, ffn_module):
    """ffn.load(sparse=(threshold, down_threshold)): of the channels whose |silu(g)| is above
    the threshold, those whose |h| = |silu(g)·u| is at most down_threshold are left out of down
    as well — y is the block of the channels above both, within its f32 bound; hidden_values
    is torch's silu(g)·u (relative 1e-5: f32 sums of 64 products)."""
    w = weights(7)
    folder = write_llama(tmp_path / "swiglu", w, "silu")
    rng = np.random.default_rng(8)
    calibration = rng.standard_normal((16, D)).astype(np.float32)
    dense = ffn_module.load(str(folder), sparse="off")
    with torch.no_grad():
        xt = torch.tensor(calibration, dtype=torch.float64)
        h_torch = F.silu(F.linear(xt, w["gate_proj.weight"].double())) * F.linear(xt, w["up_proj.weight"].double())
    h = dense.hidden_values(calibration)
    assert h.shape == (16, H) and h.dtype == np.float32
    assert np.max(np.abs(h - h_torch.numpy())) <= 1e-5 * float(h_torch.abs().max())

    x = rng.standard_normal((1, D)).astype(np.float32)
    g = x.astype(np.float64) @ w["gate_proj.weight"].double().numpy().T
    u = x.astype(np.float64) @ w["up_proj.weight"].double().numpy().T
    act = (g / (1 + np.exp(-g)))[0]
    threshold = _gap_threshold(act, 0.2, 0.4)
    by_gate = np.abs(act) > threshold
    down_threshold = _gap_threshold((act * u[0])[by_gate], 0.3, 0.7)
    kept = by_gate & (np.abs(act * u[0]) > down_threshold)
    assert 0.2 < kept.mean() < by_gate.mean() - 0.1  # the second threshold drops channels of its own
    block = ffn_module.load(str(folder), sparse=(threshold, down_threshold))
    assert block.sparse["down_threshold"] == np.float32(down_threshold)
    y = block(x)
    state = state_of(w)
    restricted = {"gate.weight": state["gate.weight"][kept], "up.weight": state["up.weight"][kept],
                  "down.weight": state["down.weight"][:, kept]}
    y_ref, err = bound.forward_and_bound(restricted, x.astype(np.float64), "swish", True)
    assert ratio(y, y_ref, err) <= 1.0
    gate_only = ffn_module.load(str(folder), sparse=threshold)(x)
    assert ratio(gate_only, y_ref, err) > 100.0  # leaving those channels out is visible
    with pytest.raises(ffn_module.Error, match="not 4 values"):
        ffn_module.load(str(folder), sparse=(0.1, 0.1, 0.5, 0.1))
    with pytest.raises(ffn_module.Error, match="down_kept_share"):
        ffn_module.load(str(folder), sparse=(0.1, 0.1, 0.0))
    with pytest.raises(ffn_module.Error, match="finite and ≥ 0"):
        ffn_module.load(str(folder), sparse=(0.1, -1.0))


def test_calibrated_down_threshold_is_written_beside_and_used(tmp_path, run_ffn, ffn_module):
    """`--calibrate-sparsity 0.3 --calibrate-down-sparsity 0.6` writes both thresholds (the
    second: torch's ⌈0.6·n⌉-th smallest |silu(g)·u| on the same tokens), `--sparse calibrated`
    runs with both, bit for bit as ffn.load(sparse=(t, t_down, down_kept_share)) with the
    share of the gate's kept channels down still reads, which the file holds too (below 1:
    the down threshold drops some of them); a 2-matrix layer and a down share alone are
    refused by name."""
    w = weights(9)
    folder = write_llama(tmp_path / "swiglu", w, "silu")
    rng = np.random.default_rng(10)
    calibration = rng.standard_normal((64, D)).astype(np.float32)
    _, out = forward_cli(tmp_path, run_ffn, folder, calibration, "--calibrate-sparsity", "0.3",
                         "--calibrate-down-sparsity", "0.6")
    layer = json.loads((folder / "ffn-sparsity.json").read_text())["layers"]["0"]
    assert layer["target"] == pytest.approx(0.3) and layer["down_target"] == pytest.approx(0.6)
    with torch.no_grad():
        xt = torch.tensor(calibration)
        h = (F.silu(F.linear(xt, w["gate_proj.weight"])) * F.linear(xt, w["up_proj.weight"])).abs().flatten().sort().values
    assert layer["down_threshold"] == pytest.approx(float(h[int(np.ceil(0.6 * h.numel())) - 1]), rel=1e-5)
    assert "drops 60.0% by |h| alone" in out
    with torch.no_grad():
        a = F.silu(F.linear(xt, w["gate_proj.weight"])).abs()
        hv = (F.silu(F.linear(xt, w["gate_proj.weight"])) * F.linear(xt, w["up_proj.weight"])).abs()
        gate_kept = a > layer["threshold"]
        share = float((gate_kept & (hv > layer["down_threshold"])).sum() / gate_kept.sum())
    assert 0 < layer["down_kept_share"] < 1
    assert layer["down_kept_share"] == pytest.approx(share, abs=0.01)  # f32 products against torch's: a few ties
    # Python's helper on the block's own a and h gives the file's share exactly (the same values,
    # the same rule), and torch's count within the same ties.
    dense = ffn_module.load(str(folder))
    a_ffn, h_ffn = dense.hidden_activations(calibration), dense.hidden_values(calibration)
    assert ffn_module.down_kept_share(a_ffn, h_ffn, layer["threshold"], layer["down_threshold"]) == \
        layer["down_kept_share"]
    assert ffn_module.down_kept_share(a_ffn, h_ffn, layer["threshold"], layer["down_threshold"]) == \
        pytest.approx(share, abs=0.01)
    with pytest.raises(ffn_module.Error, match="shape|same"):
        ffn_module.down_kept_share(a_ffn, h_ffn[:, :-1], layer["threshold"], layer["down_threshold"])
    x = rng.standard_normal((1, D)).astype(np.float32)
    y, out = forward_cli(tmp_path, run_ffn, folder, x, "--sparse", "calibrated")
    assert "from down also |h| ≤" in out
    both = ffn_module.load(str(folder), sparse=(layer["threshold"], layer["down_threshold"], layer["down_kept_share"]))
    assert both.sparse["down_kept_share"] == layer["down_kept_share"]
    assert np.array_equal(both(x), y)
    assert not np.array_equal(ffn_module.load(str(folder), sparse=layer["threshold"])(x), y)
    bad = run_ffn("forward", "--weights", folder, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy",
                  "--calibrate-down-sparsity", "0.5", check=False)
    assert bad.returncode != 0 and "give both" in bad.stderr
    relu = write_llama(tmp_path / "relu", weights(9, gated=False), "relu")
    bad = run_ffn("forward", "--weights", relu, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy",
                  "--calibrate-sparsity", "0.5", "--calibrate-down-sparsity", "0.5", check=False)
    assert bad.returncode != 0 and "2-matrix block" in bad.stderr


def test_bad_values_are_refused_by_name(tmp_path, run_ffn, ffn_module):
    folder = write_llama(tmp_path / "m", weights(6), "silu")
    files.write_npy(tmp_path / "x.npy", np.zeros((1, D), np.float32))
    common = ("forward", "--weights", folder, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy")
    r = run_ffn(*common, "--sparse", "calibrated", check=False)
    assert r.returncode != 0 and "ffn-sparsity.json does not exist" in r.stderr
    r = run_ffn(*common, "--sparse", "-1", check=False)
    assert r.returncode != 0 and "--sparse '-1'" in r.stderr
    (folder / "ffn-sparsity.json").write_text('{"format": "other"}')
    r = run_ffn(*common, "--sparse", "calibrated", check=False)
    assert r.returncode != 0 and "not a file of ffn's sparse-decode thresholds" in r.stderr
    with pytest.raises(ffn_module.Error, match="threshold must be finite"):
        ffn_module.load(str(folder), sparse=float("nan"))
    with pytest.raises(ffn_module.Error, match="sparse='sometimes'"):
        ffn_module.load(str(folder), sparse="sometimes")


def test_gemma3n_gguf_with_block_types_decodes_on_q8_0_copies(tmp_path, run_ffn):
    """A Gemma 3n GGUF whose up and down are q4_0 (the gate f32), `--sparse exact`, one
    token a call: the sparse path reads up and down as q8_0 copies along d_model, requantised
    from the file's values, and up's products take x in q8_0 (as the dense q8_0 products
    do). The copies and x in q8_0 are made here by the gguf package (llama.cpp's own
    quantiser and dequantiser, bit for bit ggml's reference, which ffn's activation quantiser
    is too), and y is the module with those values within the f32 bound, and twenty times
    nearer it than the module of the file's own values is (so the test sees which values
    ran). `--sparse off` is the module of the file's values within the bound (its activations
    quantised to q8_0, so not nearer it than that)."""
    import gguf

    q4, q8 = gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q8_0
    layers = [layer_weights(seed) for seed in (1, 2)]
    wr = gguf.GGUFWriter(str(tmp_path / "g3n.gguf"), "gemma3n")
    wr.add_block_count(2)
    wr.add_embedding_length(GD)
    wr.add_feed_forward_length([layers[0]["up.weight"].shape[0]] * 2)
    wr.add_activation_sparsity_scale([1.6448536, float("-inf")])
    for n, w in enumerate(layers):
        wr.add_tensor(f"blk.{n}.ffn_gate.weight", w["gate.weight"].numpy())
        for m in ("up", "down"):
            wr.add_tensor(f"blk.{n}.ffn_{m}.weight", gguf.quantize(w[m + ".weight"].numpy(), q4), raw_dtype=q4)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()

    def requantised(m, qtype):  # rows quantised and read back by gguf
        return gguf.dequantize(gguf.quantize(np.ascontiguousarray(m, np.float32), qtype), qtype)

    w = layers[0]
    file_values = {"gate.weight": w["gate.weight"], "up.weight": torch.tensor(requantised(w["up.weight"], q4)),
                   "down.weight": torch.tensor(requantised(w["down.weight"], q4))}
    copies = dict(file_values)
    copies["up.weight"] = torch.tensor(requantised(file_values["up.weight"].numpy(), q8))
    copies["down.weight"] = torch.tensor(requantised(file_values["down.weight"].numpy().T, q8).T.copy())
    x = torch.randn(3, GD, generator=torch.Generator().manual_seed(11))
    x_q8 = torch.tensor(requantised(x.numpy(), q8))
    y_copies, err = exact_and_bound(copies, x, 0.95, x_up=x_q8)
    y_file_q8, _ = exact_and_bound(file_values, x, 0.95, x_up=x_q8)
    y_file, err_file = exact_and_bound(file_values, x, 0.95)
    for t in range(3):
        y, out = forward_cli(tmp_path, run_ffn, tmp_path / "g3n.gguf", x[t:t + 1].numpy(), "--sparse", "exact")
        assert "up q4_0 and down q4_0 held again as q8_0 rows along d_model" in out, out
        assert ratio(y, y_copies[t:t + 1], err[t:t + 1]) <= 1.0
        # The bound is loose here (its cutoff term), so also: y is twenty times nearer the
        # copies' module than that is to the file's — the copies' values ran.
        assert np.max(np.abs(y - y_copies[t:t + 1])) < 0.05 * np.max(np.abs(y_copies[t] - y_file_q8[t]))
    y, out = forward_cli(tmp_path, run_ffn, tmp_path / "g3n.gguf", x[:1].numpy(), "--sparse", "off")
    assert "sparse decode" not in out
    assert ratio(y, y_file[:1], err_file[:1]) <= 1.0


def test_bench_sparsity_writes_its_rows(tmp_path, run_ffn):
    out = run_ffn("bench", "--d", 64, "--variant", "swiglu", "--dtype", "bf16", "--tokens", 1, "--reps", 1,
                  "--sparsity", "0,50", "--json", tmp_path / "b.json")
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert [r["target_sparsity"] for r in rows] == [0.0, 0.5]
    assert rows[0]["dropped"] == 0.0 and rows[0]["threshold"] == 0.0
    assert 0.45 < rows[1]["dropped"] < 0.55  # calibrated on other tokens: near, not exactly, the target
    assert all(r["sparse_ms"] > 0 and r["dense_ms"] > 0 for r in rows)
    assert "sparse decode (--sparsity)" in out.stdout
    # Without --tokens, decode's token counts (not the bench's usual ones up to 1024).
    run_ffn("bench", "--d", 64, "--variant", "swiglu", "--dtype", "bf16", "--reps", 1, "--sparsity", "50",
            "--json", tmp_path / "d.json")
    assert [r["tokens"] for r in json.loads((tmp_path / "d.json").read_text())["rows"]] == [1, 2, 4, 8]
    r = run_ffn("bench", "--d", 64, "--tokens", 1, "--sparsity", "0,150", check=False)
    assert r.returncode != 0 and "--sparsity" in r.stderr


def test_bench_down_sparsity_drops_more_of_down(tmp_path, run_ffn):
    """--down-sparsity P: each sparse block also has the down threshold that drops P of the
    calibration tokens' channels by |h| alone. On the timed tokens down then reads fewer rows
    than up: its dropped share is the union of the two rules' — at least the larger of s and
    P, at most their sum (the rules overlap: a small |act(gate)| makes a small |h|), each
    within 0.05 as the thresholds were calibrated on other tokens; at s = 0, P itself — and the
    limit counts up's rows by read and down's by down read."""
    out = run_ffn("bench", "--d", 128, "--variant", "swiglu", "--dtype", "bf16", "--tokens", 1, "--reps", 1,
                  "--sparsity", "0,50", "--down-sparsity", "0.6", "--json", tmp_path / "b.json")
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert "--down-sparsity" in out.stdout
    for r in rows:
        assert r["down_target"] == 0.6 and r["down_threshold"] > 0
        assert r["down_dropped"] >= r["dropped"] and r["down_read"] <= r["read"]
        s = r["target_sparsity"]
        assert max(s, 0.6) - 0.05 < r["down_dropped"] < min(1.0, s + 0.6) + 0.05, r
        if s == 0:
            assert abs(r["down_dropped"] - 0.6) < 0.05, r
        # bf16: sparse decode's rows are bf16 as stored, so each matrix is a third of the bytes.
        assert r["limit"] == pytest.approx((1 + r["read"] + r["down_read"]) / 3, rel=1e-9)
    for bad_args, message in [(["--down-sparsity", "0.5"], "give --sparsity too"),
                              (["--sparsity", "50", "--down-sparsity", "1"], "--down-sparsity"),
                              (["--variant", "gelu", "--sparsity", "50", "--down-sparsity", "0.5"], "gelu block")]:
        r = run_ffn("bench", "--d", 64, "--tokens", 1, *bad_args, check=False)
        assert r.returncode != 0 and message in r.stderr, (bad_args, r.stderr)
