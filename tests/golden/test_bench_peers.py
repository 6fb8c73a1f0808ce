"""ffn bench --peers: PyTorch and oneDNN timing the same block beside ffn's row, within the
time budget each peer row is given, and within the ISA that FFN_ISA sets. (The bench's own
rows, roofs and pictures: test_bench.py.) Speed itself is never asserted here."""
import json
import os

import pytest


@pytest.mark.parametrize("variant", ["reglu", "gelu"])
def test_peers_run_the_same_block(run_ffn, ffn_bin, tmp_path, variant):
    """Both peers time the block (PyTorch: the seeds' module; oneDNN when its peer is
    built), and oneDNN's output matches double precision (a peer computing something
    cheaper — e.g. relu as a leaky relu of slope 1 — would be flagged)."""
    out = tmp_path / "peers.json"
    p = run_ffn("bench", "--variant", variant, "--d", "64", "--hidden", "96", "--tokens", "1,3", "--reps", "1",
                "--threads", "1", "--dtype", "f32,bf16", "--peers", "--json", out)
    rows = json.loads(out.read_text())["rows"]
    assert sorted({r["dtype"] for r in rows}) == ["bf16", "f32"], p.stdout
    onednn_built = os.path.exists(os.path.join(os.path.dirname(ffn_bin), "ffn-peer-onednn"))
    for r in rows:
        # PyTorch in the row's own type (bf16: module and input cast to torch.bfloat16);
        # oneDNN for f32 rows only. Beside each peer's time, ffn's own timed around it.
        peers = r["peers"]
        assert peers["pytorch_ms"] > 0 and peers["ffn_ms_beside_pytorch"] > 0, p.stdout
        if r["dtype"] == "bf16":
            assert peers["onednn_ms"] is None and peers["ffn_ms_beside_onednn"] is None, p.stdout
        elif onednn_built:
            assert peers["onednn_ms"] > 0 and peers["ffn_ms_beside_onednn"] > 0, p.stdout
    if onednn_built:
        err = float(p.stdout.split("max relative error ")[1].split()[0])
        assert err < 1e-5, p.stdout  # f32 sums of 64 and 96 products: ~1e-7 expected
        # The bench's verdict on oneDNN's output. (Its other warning, roofs that rose during
        # the run, depends on how busy the machine is, not on ffn or oneDNN.)
        assert "the oneDNN peer does not compute this block" not in p.stdout, p.stdout


def test_a_peer_that_fails_is_reported_once_and_the_table_goes_on(run_ffn, tmp_path):
    """PyTorch under a python that does not exist: the bench says why, once, gives its
    cells as "-" and null, and still finishes every row (oneDNN's included, when built)."""
    out = tmp_path / "peers.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,2,3", "--reps", "1",
                "--threads", "1", "--dtype", "f32", "--peers", "--json", out,
                env={"FFN_PYTHON": str(tmp_path / "no-such-python")})
    assert p.stdout.count("PyTorch peer did not run") == 1, p.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [r["tokens"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert r["peers"]["pytorch_ms"] is None and r["peers"]["ffn_ms_beside_pytorch"] is None, p.stdout


# --- ffn bench --peers under a time budget ----------------------------------------------

def test_a_peer_row_over_the_budget_is_skipped_with_its_reason(run_ffn, tmp_path):
    """A budget shorter than one forward: each peer's first row says what its warm-up took
    and is skipped; its larger T are not run at all; the table and the run still end."""
    out = tmp_path / "peers.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,3", "--reps", "3",
                "--threads", "1", "--dtype", "f32,bf16", "--peers", "--peer-budget", "1e-7", "--json", out)
    result = json.loads(out.read_text())
    assert result["peer_budget_s"] == 1e-7
    for r in result["rows"]:
        peers = r["peers"]
        assert peers["pytorch_ms"] is None and peers["pytorch_reps"] is None, p.stdout
        why = peers["pytorch_skipped"]
        if r["tokens"] == 1:
            assert why.startswith("one forward took ") and why.endswith(", over the 1e-07 s budget"), why
        else:
            assert why.startswith("not run: at T = 1 one forward took "), why
        label = "PyTorch f32" if r["dtype"] == "f32" else "PyTorch bf16"
        assert f"  {label} T={r['tokens']} skipped: {why}" in p.stdout
    assert "peer did not run" not in p.stdout  # skipped for time is not a failure


def test_a_peer_past_its_budget_is_killed(run_ffn, tmp_path):
    """A "python" that begins its forward and never answers: killed 2 × budget + 15 s after
    the warm-up began (its child process with it), the row skipped with that reason, the
    next token count not run."""
    import time

    hang = tmp_path / "hanging-python"
    hang.write_text("#!/bin/sh\necho '{\"timing\": 1}'\nsleep 600\n")
    hang.chmod(0o755)
    out = tmp_path / "peers.json"
    start = time.monotonic()
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,3", "--reps", "1",
                "--threads", "1", "--dtype", "f32", "--peers", "--peer-budget", "0.5", "--json", out,
                env={"FFN_PYTHON": str(hang)})
    # Not a speed assertion: the kill comes 16 s after the "warm-up" began, the whole run
    # (roofs included) ends long before the hanging peer's 600 s.
    elapsed = time.monotonic() - start
    assert 16 <= elapsed < 300, p.stdout
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["peers"]["pytorch_skipped"].startswith("killed after 16"), p.stdout
    assert rows[1]["peers"]["pytorch_skipped"].startswith("not run: at T = 1 killed after"), p.stdout
    assert "PyTorch f32 T=1 skipped: killed after" in p.stdout


def test_a_peer_that_fits_fewer_repetitions_says_so(run_ffn, tmp_path):
    """The repetitions a peer chose to fit its budget are recorded and, when fewer than
    --reps, noted (a stand-in peer reports them, as pytorch_peer.py does)."""
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho '{\"timing\": 2}'\n"
                    "echo '{\"library\": \"PyTorch 0\", \"ms\": {\"2\": 7.5}, \"reps\": {\"2\": 2}, \"over_budget\": {}}'\n")
    fake.chmod(0o755)
    out = tmp_path / "peers.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "2", "--reps", "5",
                "--threads", "1", "--dtype", "f32", "--peers", "--json", out, env={"FFN_PYTHON": str(fake)})
    (row,) = json.loads(out.read_text())["rows"]
    assert row["peers"]["pytorch_ms"] == 7.5 and row["peers"]["pytorch_reps"] == 2
    assert row["peers"]["pytorch_skipped"] is None
    assert "PyTorch f32 T=2: median of 2 repetitions, as many as fit the 20 s budget" in p.stdout


def test_under_ffn_isa_the_peers_are_kept_within_the_same_isa(run_ffn, tmp_path):
    """FFN_ISA narrows ffn's kernels; the peers' libraries get the same ceiling (oneDNN's
    ONEDNN_MAX_CPU_ISA; PyTorch's ATEN_CPU_CAPABILITY, and at AVX2 its oneDNN off, whose
    bf16 matmul needs AVX-512), and the bf16 peer still runs."""
    if " avx2" not in open("/proc/cpuinfo").read():
        pytest.skip("this CPU lacks avx2")
    out = tmp_path / "peers.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1", "--reps", "1",
                "--threads", "1", "--dtype", "f32,bf16", "--peers", "--json", out, env={"FFN_ISA": "avx2"})
    result = json.loads(out.read_text())
    assert result["isa"] == "avx2" and result["peer_isa_ceiling"] == "AVX2"
    assert "peers' libraries kept within ffn's ISA avx2: oneDNN by ONEDNN_MAX_CPU_ISA=AVX2" in p.stdout
    for r in result["rows"]:
        assert r["peers"]["pytorch_ms"] > 0, p.stdout
