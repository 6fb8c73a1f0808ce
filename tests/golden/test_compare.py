"""ffn compare: a tiny configuration on generated text trains (the loss falls) at equal
parameter counts (within 1%) — not which variant wins, which a run this small cannot say."""
import csv
import json
import random

import pytest

VARIANTS = ["relu", "gelu", "swiglu", "geglu"]
TINY = ["--d", 32, "--layers", 1, "--steps", 80, "--batch", 64, "--seeds", 2, "--eval-tokens", 512,
        "--eval-every", 20, "--threads", 2]


def text(path, nbytes=40000):
    words = "the king shall speak of love and war my lord what is thy name to be or not".split()
    rng = random.Random(3)
    out = []
    while sum(map(len, out)) < nbytes:
        out.append(rng.choice(words) + rng.choice([" ", " ", " ", ", ", ".\n"]))
    path.write_text("".join(out))
    return path


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("compare")


@pytest.fixture(scope="module")
def tiny_run(run_ffn, tiny_dir):
    data, curves = text(tiny_dir / "text.txt"), tiny_dir / "curves.csv"
    p = run_ffn("compare", "--data", data, "--variants", ",".join(VARIANTS), *TINY, "--csv", curves, "--json",
                "--svg", tiny_dir / "curves.svg", "--save", tiny_dir / "state")
    return json.loads(p.stdout), list(csv.DictReader(curves.open())), p.stderr


def test_parameter_counts_agree_within_one_percent(tiny_run):
    out, _, _ = tiny_run
    counts = {r["variant"]: r["parameters"] for r in out["results"]}
    assert set(counts) == set(VARIANTS)
    assert abs(counts["swiglu"] - counts["gelu"]) / counts["gelu"] <= 0.01
    assert out["parameters"]["relative_difference"] <= 0.01
    hidden = {r["variant"]: r["hidden"] for r in out["results"]}
    assert hidden["gelu"] == 4 * 32 and hidden["swiglu"] == round(2 * 4 * 32 / 3)


def test_training_lowers_the_loss(tiny_run):
    out, curves, _ = tiny_run
    for variant in VARIANTS:
        for seed in ("1", "2"):
            rows = [r for r in curves if r["variant"] == variant and r["seed"] == seed]
            assert [int(r["step"]) for r in rows] == [20, 40, 60, 80]
            assert float(rows[-1]["valid_loss"]) < float(rows[0]["valid_loss"])
            assert float(rows[-1]["train_loss"]) < 5.0  # ln 256 = 5.55 untrained
    for r in out["results"]:
        assert len(r["valid_losses"]) == 2 and r["valid_loss_mean"] < 4.0
        assert r["bits_per_byte"] == pytest.approx(r["valid_loss_mean"] / 0.6931471805599453)
        assert r["tokens_per_second"] > 0
        if r["variant"] != "gelu":
            assert isinstance(r["exceeds_noise"], bool)


def test_progress_is_a_line_per_run_when_not_a_terminal(tiny_run):
    _, _, err = tiny_run
    assert err.count("validation loss") == len(VARIANTS) * 2


def test_the_table_and_errors(run_ffn, tmp_path):
    data = text(tmp_path / "t.txt", 20000)
    out = run_ffn("compare", "--data", data, "--variants", "gelu,swiglu", "--d", 16, "--layers", 1, "--steps", 10,
                  "--batch", 16, "--seeds", 1, "--eval-tokens", 64).stdout
    assert "valid loss (std)" in out and "bits/byte" in out and "tokens/s" in out
    assert "one seed: noise unknown" in out
    bad = run_ffn("compare", "--data", tmp_path / "missing.txt", check=False)
    assert bad.returncode == 1 and "missing.txt" in bad.stderr
    bad = run_ffn("compare", "--data", data, "--variants", "swoosh", check=False)
    assert bad.returncode == 1 and "swoosh" in bad.stderr
    bad = run_ffn("compare", "--data", data, "--variants", "gelu,swiglu,gelu", check=False)
    assert bad.returncode == 1 and "gelu named twice" in bad.stderr
    assert "tinyshakespeare.txt" in run_ffn("compare", "--help").stdout
    # The curves are written at the end of a run of minutes: an unwritable path fails first.
    for option in ("--csv", "--svg"):
        bad = run_ffn("compare", "--data", data, option, tmp_path / "no-such-dir" / "out", check=False)
        assert bad.returncode == 1 and option in bad.stderr and "no-such-dir" in bad.stderr
        assert "validation loss" not in bad.stderr  # nothing was trained


def test_plot_and_resume_from_saved_state(run_ffn, tiny_run, tiny_dir):
    out, _, _ = tiny_run
    svg = (tiny_dir / "curves.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == len(VARIANTS)
    states = sorted(p.name for p in (tiny_dir / "state").iterdir())
    assert states == sorted(f"{v}-seed{s}.safetensors" for v in VARIANTS for s in (1, 2))
    # Every run is finished: resuming retrains nothing and reports the same results.
    again = run_ffn("compare", "--data", tiny_dir / "text.txt", "--variants", ",".join(VARIANTS), *TINY, "--json",
                    "--resume", tiny_dir / "state")
    resumed = json.loads(again.stdout)
    for a, b in zip(out["results"], resumed["results"]):
        assert a["valid_losses"] == b["valid_losses"] and a["curves"] == b["curves"]
    other = run_ffn("compare", "--data", tiny_dir / "text.txt", "--variants", "gelu", *TINY, "--lr", 0.001,
                    "--resume", tiny_dir / "state", check=False)
    assert other.returncode == 1 and "another run" in other.stderr and "lr=0.001" in other.stderr


def test_moe_against_swiglu_at_equal_active_parameters(run_ffn, tmp_path):
    """The moe variant: SwiGLU experts at the dense SwiGLU model's active parameters (within
    1%), more parameters in all, a loss that falls, its difference from SwiGLU reported
    against the seed noise, and a resumed run equal to the uninterrupted one."""
    data = text(tmp_path / "t.txt")
    args = ["compare", "--data", data, "--variants", "swiglu,moe", "--experts", 4, "--top-k", 2, *TINY, "--json"]
    out = json.loads(run_ffn(*args, "--save", tmp_path / "state").stdout)
    rows = {r["variant"]: r for r in out["results"]}
    dense, moe = rows["swiglu"], rows["moe"]
    assert abs(moe["parameters"] - dense["parameters"]) / dense["parameters"] <= 0.01
    assert moe["experts"] == 4 and moe["top_k"] == 2 and moe["balance"] == 0.01
    assert moe["total_parameters"] > moe["parameters"]
    assert moe["hidden"] < dense["hidden"]  # two of four experts share the dense block's units
    for seed_curve in moe["curves"]:
        assert seed_curve[-1][2] < seed_curve[0][2] - 0.3  # validation loss falls
    assert isinstance(moe["diff_vs_swiglu"], float) and isinstance(moe["exceeds_noise_vs_swiglu"], bool)
    again = json.loads(run_ffn(*args, "--resume", tmp_path / "state").stdout)
    assert {r["variant"]: r["valid_losses"] for r in again["results"]} == {
        r["variant"]: r["valid_losses"] for r in out["results"]}
    table = run_ffn("compare", "--data", data, "--variants", "swiglu,moe", "--d", 16, "--layers", 1, "--steps", 10,
                    "--batch", 16, "--seeds", 1, "--eval-tokens", 64).stdout
    assert "vs SwiGLU at the same active parameters" in table
    bad = run_ffn("compare", "--data", data, "--variants", "moe", "--experts", 4, "--top-k", 5, check=False)
    assert bad.returncode == 1 and "--top-k 5" in bad.stderr


def test_activation_sparsity(run_ffn, tmp_path):
    """--sparsity: at target 0 the sparse evaluation is the dense model (increase exactly 0,
    the same losses bit for bit, only exact zeros dropped); thresholds are ≥ 0, one per layer
    and seed; the CSV and the plot hold every run. Whether the loss rises with sparsity is
    not asserted: a tiny model's loss could in principle fall."""
    data = text(tmp_path / "t.txt", 20000)
    csv_path, svg_path = tmp_path / "sparsity.csv", tmp_path / "sparsity.svg"
    out = json.loads(run_ffn("compare", "--data", data, "--variants", "relu,swiglu", "--d", 16, "--layers", 2,
                             "--steps", 20, "--batch", 16, "--seeds", 2, "--eval-tokens", 128, "--threads", 2,
                             "--sparsity", "0,50", "--json", "--sparsity-csv", csv_path,
                             "--sparsity-svg", svg_path).stdout)
    for r in out["results"]:
        rows = r["sparsity"]
        assert [row["target"] for row in rows] == [0.0, 0.5]
        dense, half = rows
        assert dense["increase"] == 0.0 and dense["within_noise"] is True
        assert dense["valid_losses"] == r["valid_losses"]
        assert dense["achieved"] == dense["exact_zeros"]
        assert all(t == 0.0 for seed in dense["thresholds"] for t in seed)
        assert len(half["thresholds"]) == 2 and all(len(seed) == 2 and min(seed) >= 0 for seed in half["thresholds"])
        assert 0.0 <= half["achieved"] <= 1.0
        assert half["increase"] == pytest.approx(half["valid_loss_mean"] - r["valid_loss_mean"], abs=1e-12)
        if r["variant"] == "relu":
            assert dense["exact_zeros"] > 0  # ReLU's natural sparsity
        # The gate rule reads 1 − 2s/3 of a gated block (up's rows and down's columns
        # skipped), 1 − s/2 of a 2-matrix one (its up read whole).
        share = 2 / 3 if r["variant"] == "swiglu" else 1 / 2
        for row in rows:
            assert row["rule"] == "gate"
            assert row["weights_read"] == pytest.approx(1 - share * row["achieved"], abs=1e-12)
    table = list(csv.DictReader(csv_path.open()))
    assert len(table) == 2 * 2 * 2  # variants × seeds × targets
    # The statistics from the per-seed rows: the mean increase, its noise the standard error
    # of the per-seed differences (sample sd / √seeds), "within noise" unless |mean| > 2 SE.
    for r in out["results"]:
        for row in r["sparsity"]:
            diffs = [float(c["increase"]) for c in table
                     if c["variant"] == r["variant"] and float(c["target"]) == row["target"]]
            mean = sum(diffs) / 2
            se = (sum((d - mean) ** 2 for d in diffs) / 1) ** 0.5 / 2 ** 0.5
            assert row["increase"] == pytest.approx(mean, abs=1e-8)
            assert row["increase_noise"] == pytest.approx(se, abs=1e-8)
            assert row["within_noise"] == (not abs(row["increase"]) > 2 * row["increase_noise"])
    for row in table:
        if float(row["target"]) == 0:
            assert float(row["increase"]) == 0 and row["valid_loss"] == row["dense_loss"]
    assert svg_path.read_text().count("<polyline") == 2


def test_activation_sparsity_by_the_hidden_value(run_ffn, tmp_path):
    """--sparsity-rule hidden thresholds |h| = |act(gate)·up|, the input of down: a gated
    block's evaluation differs from the gate rule's and reads 1 − s/3 of its weights; a
    2-matrix block's value is the same under both rules (act(up) = h), so its losses and
    thresholds are the gate rule's bit for bit — the same seeds train the same models."""
    data = text(tmp_path / "t.txt", 20000)
    args = ["compare", "--data", data, "--variants", "relu,swiglu", "--d", 16, "--layers", 2, "--steps", 20,
            "--batch", 16, "--seeds", 2, "--eval-tokens", 128, "--threads", 2, "--sparsity", "0,60", "--json"]
    by_gate = {r["variant"]: r for r in json.loads(run_ffn(*args).stdout)["results"]}
    csv_path = tmp_path / "hidden.csv"
    by_hidden = {r["variant"]: r
                 for r in json.loads(run_ffn(*args, "--sparsity-rule", "hidden", "--sparsity-csv", csv_path).stdout)["results"]}
    for name in ("relu", "swiglu"):
        g, h = by_gate[name]["sparsity"], by_hidden[name]["sparsity"]
        assert [row["rule"] for row in h] == ["hidden", "hidden"]
        assert h[0]["increase"] == 0.0  # threshold 0: the dense model, only exact zeros dropped
        if name == "relu":
            assert [row["valid_losses"] for row in h] == [row["valid_losses"] for row in g]
            assert [row["thresholds"] for row in h] == [row["thresholds"] for row in g]
            assert h[1]["weights_read"] == pytest.approx(1 - h[1]["achieved"] / 2, abs=1e-12)
        else:
            assert h[1]["thresholds"] != g[1]["thresholds"]
            assert h[1]["valid_losses"] != g[1]["valid_losses"]
            assert h[1]["weights_read"] == pytest.approx(1 - h[1]["achieved"] / 3, abs=1e-12)
    table = list(csv.DictReader(csv_path.open()))
    assert len(table) == 2 * 2 * 2 and all(row["rule"] == "hidden" for row in table)
    # Both at once (--sparsity-hidden): the gate rule's targets, then |h| below the threshold
    # that drops 60 % by |h| alone. At target 0 that is the hidden rule at 60 % exactly (the
    # same thresholds, the same losses). Above it up's rows are skipped for the gate's drops
    # only and down's columns for both; the shares are means over layers, and the second
    # layer's input differs from the gate rule's run (the first layer dropped more), so the
    # gate's share is compared with the gate rule's within 0.05, not bit for bit.
    both = {r["variant"]: r for r in json.loads(run_ffn(*args, "--sparsity-hidden", "60").stdout)["results"]}
    for name in ("relu", "swiglu"):
        g, h, b = by_gate[name]["sparsity"], by_hidden[name]["sparsity"], both[name]["sparsity"]
        assert b[0]["valid_losses"] == h[1]["valid_losses"] and b[0]["hidden_thresholds"] == h[1]["thresholds"]
        assert b[0]["up_skipped"] == (g[0]["up_skipped"])  # exact zeros only (ReLU's)
        assert b[1]["thresholds"] == g[1]["thresholds"] and b[1]["hidden_target"] == 0.6
        if name == "swiglu":
            assert abs(b[1]["up_skipped"] - g[1]["achieved"]) < 0.05
            assert b[1]["achieved"] > b[1]["up_skipped"] + 0.05  # |h| dropped channels of its own
            assert b[1]["weights_read"] == pytest.approx((1 + (1 - b[1]["up_skipped"]) + (1 - b[1]["achieved"])) / 3,
                                                          abs=1e-12)
        else:
            assert b[1]["up_skipped"] == 0.0  # a 2-matrix block reads up whole


def test_activation_sparsity_errors(run_ffn, tmp_path):
    data = text(tmp_path / "t.txt", 20000)
    tiny = ["--data", data, "--d", 16, "--layers", 1, "--steps", 5, "--batch", 16, "--seeds", 1, "--eval-tokens", 64]
    for bad_args, message in [(["--sparsity", "100"], "[0, 100)"), (["--sparsity", "50,50"], "named twice"),
                              (["--sparsity-csv", tmp_path / "x.csv"], "need --sparsity"),
                              (["--sparsity-rule", "hidden"], "need --sparsity"),
                              (["--sparsity-hidden", "50"], "need --sparsity"),
                              (["--sparsity", "50", "--sparsity-hidden", "100"], "[0, 100)"),
                              (["--sparsity", "50", "--sparsity-rule", "hidden", "--sparsity-hidden", "50"],
                               "already threshold |h|"),
                              (["--variants", "swiglu,moe", "--experts", 4, "--sparsity", "50"], "moe variant is not evaluated")]:
        bad = run_ffn("compare", *tiny, *bad_args, check=False)
        assert bad.returncode == 1 and message in bad.stderr, (bad_args, bad.stderr)
        assert "validation loss" not in bad.stderr  # refused before training
