"""ffn bench: the JSON it writes (roofs, rows, the accounting behind each figure), and its
--backward rows. Speed itself is never asserted here (the machine is shared and noisy):
only that every figure is present, finite and consistent with the block's FLOPs."""
import json
import os
import math

import pytest


@pytest.fixture(scope="module")
def bench_json(run_ffn, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,3",
                "--reps", "1", "--threads", "2", "--backward", "--json", out)
    return json.loads(out.read_text()), p.stdout


def test_roofs_are_measured(bench_json):
    """At the start, and again at the end (a machine busier at the start than later would
    make every efficiency of the run too high; the bench then says so)."""
    roofs = bench_json[0]["roofs"]
    assert roofs["compute_gflops"] > 0 and roofs["memory_gbps"] > 0
    assert roofs["at_end"]["compute_gflops"] > 0 and roofs["at_end"]["memory_gbps"] > 0
    assert "roofs at the end of the run: compute" in bench_json[1]


def test_rows_cover_every_pass_and_token_count(bench_json):
    rows = bench_json[0]["rows"]
    got = sorted((r["pass"], r["tokens"]) for r in rows)
    want = sorted((p, t) for p in ("forward", "fwd+bwd", "fwd+bwd (recompute)") for t in (1, 3))
    assert got == want
    for r in rows:
        assert (r["variant"], r["d"], r["hidden"], r["dtype"], r["threads"]) == ("swiglu", 64, 96, "f32", 2)
        for key in ("ms", "gflops", "gbps", "efficiency", "roofline_ms"):
            assert math.isfinite(r[key]) and r[key] > 0, (key, r)


def test_forward_rows_are_also_judged_against_the_roofs_beside_them(bench_json):
    """Each forward row carries the memory and compute roofs measured around it and the
    efficiency against them (same roofline formula); the training rows, timed after, are
    judged by the run's roofs only."""
    rows = bench_json[0]["rows"]
    for r in rows:
        if r["pass"] != "forward":
            assert "efficiency_beside" not in r and "roofs_beside" not in r, r
            continue
        beside = r["roofs_beside"]
        for key in ("compute_gflops", "memory_gbps"):
            assert math.isfinite(beside[key]) and beside[key] > 0, r
        weights = 3 * 64 * 96 * 4  # f32 bytes
        moved = weights + 8 * r["tokens"] * 64
        flops = 2 * 3 * 64 * 96 * r["tokens"]
        roofline_ms = max(moved / (beside["memory_gbps"] * 1e9), flops / (beside["compute_gflops"] * 1e9)) * 1e3
        assert r["efficiency_beside"] == pytest.approx(roofline_ms / r["ms"], rel=1e-9), r


@pytest.mark.parametrize("pass_name,flops_per_weight", [("forward", 2), ("fwd+bwd", 6), ("fwd+bwd (recompute)", 6)])
def test_gflops_are_the_blocks_useful_flops_over_the_time(bench_json, pass_name, flops_per_weight):
    weights = 3 * 64 * 96  # SwiGLU without bias: gate, up, down
    for r in bench_json[0]["rows"]:
        if r["pass"] != pass_name:
            continue
        flops = flops_per_weight * weights * r["tokens"]
        assert r["gflops"] == pytest.approx(flops / (r["ms"] * 1e-3) / 1e9, rel=1e-9)


@pytest.mark.parametrize("isa", ["avx512", "avx512_bf16"])
def test_bf16_rows_are_judged_by_the_roof_of_the_instructions_they_run(run_ffn, tmp_path, isa):
    """On avx512_bf16 packed bf16 blocks run vdpbf16ps (two multiply-adds a lane): their rows
    use that instruction's roof, measured in the same run; elsewhere the FMA roof."""
    flag = {"avx512": "avx512f", "avx512_bf16": "avx512_bf16"}[isa]
    if f" {flag}" not in open("/proc/cpuinfo").read():
        pytest.skip(f"this CPU lacks {isa}")
    out = tmp_path / "bench.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,3", "--reps", "1",
                "--threads", "1", "--dtype", "f32,bf16", "--json", out, env={"FFN_ISA": isa})
    result = json.loads(out.read_text())
    roofs, rows = result["roofs"], result["rows"]
    assert result["isa"] == isa
    if isa == "avx512_bf16":
        assert roofs["bf16_dot_gflops"] > 0, p.stdout
        assert "vdpbf16ps" in p.stdout
    else:
        assert "bf16_dot_gflops" not in roofs
    for r in rows:
        dot = r["dtype"] == "bf16" and isa == "avx512_bf16"
        assert r["compute_roof_gflops"] == (roofs["bf16_dot_gflops"] if dot else roofs["compute_gflops"]), r
        assert ("vdpbf16ps" in r["path"]) == dot, r


@pytest.mark.parametrize("isa,loop", [("avx2", "f32_fma_roof_avx2: 12 FMA chains x 8 f32 lanes (256-bit ymm)"),
                                      ("avx512", "f32_fma_roof_avx512: 24 FMA chains x 16 f32 lanes (512-bit zmm)")])
def test_roofs_are_measured_with_the_vectors_of_the_isa_that_runs(run_ffn, tmp_path, isa, loop):
    """FFN_ISA=avx2 on a wider machine judges the AVX2 kernels against ymm roof loops (issue 23),
    and the header and the JSON say which loops made the roofs."""
    flag = {"avx2": "avx2", "avx512": "avx512f"}[isa]
    if f" {flag}" not in open("/proc/cpuinfo").read():
        pytest.skip(f"this CPU lacks {isa}")
    out = tmp_path / "bench.json"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1", "--reps", "1",
                "--threads", "1", "--json", out, env={"FFN_ISA": isa})
    assert loop in p.stdout
    assert json.loads(out.read_text())["roofs"]["loops"].startswith(loop)


def test_backward_section_reports_memory_kept_per_token(bench_json):
    # saved mode keeps x and g, u: 4·(D + 2H) bytes; recompute mode x alone: 4·D.
    assert "1,024 bytes saved mode, 256 bytes recompute mode" in bench_json[1]


def test_the_machine_is_named(bench_json):
    """Ratios are against this machine's roofs: the header and the JSON say which machine
    (CPUID family and model, and the caches Linux reports)."""
    machine = bench_json[0]["machine"]
    assert machine["family"] > 0 and machine["model"] >= 0
    assert all(c["bytes"] > 0 and c["level"].startswith("L") for c in machine["caches"])
    assert f"x86 family {machine['family']}, model {machine['model']}" in bench_json[1]


def test_forward_rows_time_enough_copies_of_the_block_to_leave_the_cache(bench_json):
    """A block timed again and again would keep part of its weights in the last-level cache
    between forwards, which a model's decode step never does: the forward rows time copies
    of the block in turn, as many as span 16x the largest cache the machine reports (32 MiB
    where it reports none), at most 8. This block (3 x 64 x 96 f32, 72 KiB) needs the most."""
    data, stdout = bench_json
    caches = [c["bytes"] for c in data["machine"]["caches"]]
    largest = max(caches) if caches else 32 << 20
    weights = 3 * 64 * 96 * 4
    want = min(8, max(1, -(-16 * largest // weights)))
    assert want == 8
    forward = [r for r in data["rows"] if r["pass"] == "forward"]
    assert forward and all(r["block_copies"] == want for r in forward)
    assert "8 copies of the block (1 MB of weights) timed in turn" in stdout


def test_integer_rows_are_judged_against_the_integer_dot_roof(run_ffn, tmp_path):
    """q8_0's kernels dot bytes in integers (vpdpbusd: 4 multiply-adds a 32-bit lane per
    instruction, up to 4x the FMA's), so its rows are judged against the integer dot chains'
    roof, measured in the same run, where the ISA has that loop; f32 rows keep the FMA's."""
    out = tmp_path / "bench.json"
    run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--dtype", "q8_0,f32", "--tokens", "1,3",
            "--reps", "1", "--json", out)
    data = json.loads(out.read_text())
    roofs = data["roofs"]
    for r in data["rows"]:
        if r["dtype"] == "f32":
            assert r["compute_roof"] == "f32_fma" and r["compute_roof_gflops"] == roofs["compute_gflops"], r
            continue
        if "int8_dot_gops" not in roofs:  # no integer roof loop on this ISA (scalar, Arm): the FMA's
            assert r["compute_roof"] == "f32_fma", r
            continue
        assert r["compute_roof"] == "int8_dot" and r["compute_roof_gflops"] == roofs["int8_dot_gops"], r
        assert roofs["int8_dot_loop"].startswith("int8_dot_roof_"), roofs
        weights = 3 * 64 * 96 * 34 // 32  # q8_0: 34 bytes a block of 32
        moved = weights + 8 * r["tokens"] * 64
        flops = 2 * 3 * 64 * 96 * r["tokens"]
        roofline_ms = max(moved / (roofs["memory_gbps"] * 1e9), flops / (roofs["int8_dot_gops"] * 1e9)) * 1e3
        assert r["efficiency"] == pytest.approx(roofline_ms / r["ms"], rel=1e-9), r
    assert any(r["dtype"] == "q8_0" for r in data["rows"])


def test_moe_rows_are_judged_against_the_roof_of_their_kernels(run_ffn, tmp_path):
    """A mixture-of-experts layer's rows take the same compute roof as a dense block's of the
    type: the integer dot chains' for q8_0 experts (against the FMA chains' a prefill row read
    above 1), the FMA chains' for f32 — and their efficiency is the roofline of those roofs."""
    out = tmp_path / "moe.json"
    run_ffn("bench", "--preset", "qwen3-30b-a3b", "--dtype", "q8_0", "--tokens", "1", "--reps", "1", "--threads", "2",
            "--json", out)
    data = json.loads(out.read_text())
    roofs = data["roofs"]
    (row,) = data["rows"]
    if "int8_dot_gops" not in roofs:  # no integer roof loop on this ISA (scalar, Arm): the FMA's
        assert row["compute_roof"] == "f32_fma" and row["compute_roof_gflops"] == roofs["compute_gflops"], row
    else:
        assert row["compute_roof"] == "int8_dot" and row["compute_roof_gflops"] == roofs["int8_dot_gops"], row
    roofline_ms = max(row["bytes"] / (roofs["memory_gbps"] * 1e9),
                      row["flops"] / (row["compute_roof_gflops"] * 1e9)) * 1e3
    assert row["roofline_ms"] == pytest.approx(roofline_ms, rel=1e-9), row
    assert row["efficiency"] == pytest.approx(roofline_ms / row["ms"], rel=1e-9), row


def test_an_unwritable_json_path_fails_before_the_run(run_ffn, tmp_path):
    target = tmp_path / "no-such-dir" / "bench.json"
    p = run_ffn("bench", "--d", "64", "--hidden", "96", "--tokens", "1", "--reps", "1", "--json", target,
                check=False)
    assert p.returncode == 1 and "--json" in p.stderr and "no-such-dir" in p.stderr
    assert "roofs (this run)" not in p.stdout  # failed before measuring anything


def test_the_json_is_written_whole_with_no_temporary_left(bench_json, run_ffn, tmp_path):
    out = tmp_path / "bench.json"
    out.write_text("old")
    run_ffn("bench", "--d", "64", "--hidden", "96", "--tokens", "1", "--reps", "1", "--json", out)
    assert json.loads(out.read_text())["rows"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]


# --- ffn bench --svg: the run as a roofline picture -------------------------------------

SVG_NS = {"svg": "http://www.w3.org/2000/svg"}


@pytest.fixture(scope="module")
def roofline_run(run_ffn, tmp_path_factory):
    """A tiny run with peers, written as JSON and as SVG."""
    folder = tmp_path_factory.mktemp("roofline")
    out_json, out_svg = folder / "bench.json", folder / "bench.svg"
    p = run_ffn("bench", "--variant", "swiglu", "--d", "64", "--hidden", "96", "--tokens", "1,3", "--reps", "1",
                "--threads", "1", "--dtype", "f32,q8_0", "--peers", "--json", out_json, "--svg", out_svg)
    import xml.etree.ElementTree as ET

    return json.loads(out_json.read_text()), ET.parse(out_svg).getroot(), p.stdout, folder


def _axis(root, which):
    """v -> pixel on the picture's own log axis, from two of its labelled decade ticks."""
    ticks = [t for t in root.iter("{http://www.w3.org/2000/svg}line") if t.get("class") == f"tick {which}"]
    assert len(ticks) >= 2, which
    coord = "x1" if which == "x" else "y1"
    (v0, p0), (v1, p1) = [(float(t.get("data-value")), float(t.get(coord))) for t in (ticks[0], ticks[-1])]
    return lambda v: p0 + (math.log10(v) - math.log10(v0)) / (math.log10(v1) - math.log10(v0)) * (p1 - p0)


def _points(root):
    return [e for e in root.iter() if "point" in (e.get("class") or "").split()]


def _centre(e):
    """A marker's centre: a circle's (cx, cy); a square's middle; a path's first vertex is its top."""
    tag = e.tag.split("}")[1]
    if tag == "circle":
        return float(e.get("cx")), float(e.get("cy"))
    if tag == "rect":
        return float(e.get("x")) + float(e.get("width")) / 2, float(e.get("y")) + float(e.get("height")) / 2
    first = e.get("d").split()[0].lstrip("M").split(",")
    return float(first[0]), float(first[1]) + 5.5


def test_the_svg_is_a_log_log_picture_with_a_point_per_row(roofline_run):
    result, root, _, _ = roofline_run
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    rows = result["rows"]
    ffn = [e for e in _points(root) if "ffn" in e.get("class").split()]
    assert sorted(e.get("data-label") for e in ffn) == sorted(f"{r['dtype']} T={r['tokens']}" for r in rows)
    x_of, y_of = _axis(root, "x"), _axis(root, "y")
    for r in rows:
        (e,) = [e for e in ffn if e.get("data-label") == f"{r['dtype']} T={r['tokens']}"]
        cx, cy = _centre(e)
        # x: the row's FLOPs over the bytes its roofline charges; y: its GFLOP/s.
        assert r["flops"] == 2 * 3 * 64 * 96 * r["tokens"]
        assert cx == pytest.approx(x_of(r["flops"] / r["bytes"]), abs=0.02), r
        assert cy == pytest.approx(y_of(r["gflops"]), abs=0.02), r
        # Logarithmic: a tenfold intensity is one decade's width to the right.
        assert x_of(10 * r["flops"] / r["bytes"]) - cx == pytest.approx(x_of(10) - x_of(1), abs=0.05)


def test_the_peers_points_sit_at_their_rows_intensity(roofline_run, ffn_bin):
    result, root, stdout, _ = roofline_run
    x_of, y_of = _axis(root, "x"), _axis(root, "y")
    peers = [e for e in _points(root) if "peer" in e.get("class").split()]
    onednn_built = os.path.exists(os.path.join(os.path.dirname(ffn_bin), "ffn-peer-onednn"))
    want = []
    for r in result["rows"]:
        for key, series in (("pytorch_ms", "PyTorch"), ("onednn_ms", "oneDNN")):
            ms = r["peers"].get(key)
            if ms is None:
                continue
            want.append((f"{series} {r['dtype']}", f"T={r['tokens']}"))
            (e,) = [e for e in peers if e.get("data-series") == f"{series} {r['dtype']}"
                    and e.get("data-label") == f"T={r['tokens']}"]
            cx, cy = _centre(e)
            assert cx == pytest.approx(x_of(r["flops"] / r["bytes"]), abs=0.02)
            assert cy == pytest.approx(y_of(r["flops"] / (ms * 1e-3) / 1e9), abs=0.02)
    assert sorted((e.get("data-series"), e.get("data-label")) for e in peers) == sorted(want)
    # PyTorch for f32 rows (and oneDNN when built); q8_0 rows have no peer.
    assert ("PyTorch f32", "T=1") in want, stdout
    assert (("oneDNN f32", "T=3") in want) == onednn_built, stdout
    # Peers are drawn in markers of their own, and named in the legend.
    assert {e.tag.split("}")[1] for e in peers}.isdisjoint({"circle"})
    legend = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "legend-entry"]
    assert "ffn f32" in legend and "ffn q8_0" in legend and "PyTorch f32" in legend


def test_the_roofs_of_the_run_are_drawn(roofline_run):
    result, root, _, _ = roofline_run
    x_of, y_of = _axis(root, "x"), _axis(root, "y")
    lines = {e.get("id"): e for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("id")}
    compute, memory = result["roofs"]["compute_gflops"], result["roofs"]["memory_gbps"]
    c = lines["compute-roof"]
    assert float(c.get("y1")) == float(c.get("y2")) == pytest.approx(y_of(compute), abs=0.02)
    m = lines["memory-roof"]
    inverse = lambda p, v0, p0, p1: 10 ** (math.log10(v0) + (p - p0) / (p1 - p0))  # noqa: E731
    # Both ends of the memory roof lie on y = bandwidth · x (GB/s · FLOP/byte = GFLOP/s).
    x_decade, y_decade = x_of(10) - x_of(1), y_of(10) - y_of(1)
    for end in ("1", "2"):
        px, py = float(m.get("x" + end)), float(m.get("y" + end))
        x = inverse(px, 1, x_of(1), x_of(1) + x_decade)
        y = inverse(py, 1, y_of(1), y_of(1) + y_decade)
        assert y == pytest.approx(memory * x, rel=1e-3)
    title = "".join(root.find("svg:text[@id='title']", SVG_NS).itertext())
    subtitle = "".join(root.find("svg:text[@id='subtitle']", SVG_NS).itertext())
    assert "swiglu" in title and "d_model 64" in title and "hidden 96" in title
    assert f"kernels {result['isa']}" in subtitle
    assert f"compute {compute:.1f} GFLOP/s" in subtitle and f"memory {memory:.1f} GB/s" in subtitle
    # The integer dot roof, which judges the q8_0 rows, where the ISA has its loop.
    if "int8_dot_gops" in result["roofs"]:
        i = lines["int8-dot-roof"]
        assert float(i.get("y1")) == float(i.get("y2")) == pytest.approx(y_of(result["roofs"]["int8_dot_gops"]), abs=0.02)
        assert f"integer dot {result['roofs']['int8_dot_gops']:.1f} Gop/s" in subtitle
    else:
        assert "int8-dot-roof" not in lines


def test_the_svg_is_written_whole_with_no_temporary_left(roofline_run):
    _, _, stdout, folder = roofline_run
    assert sorted(p.name for p in folder.iterdir()) == ["bench.json", "bench.svg"]
    assert "roofline picture written to" in stdout


def test_an_unwritable_svg_path_fails_before_the_run(run_ffn, tmp_path):
    p = run_ffn("bench", "--d", "64", "--hidden", "96", "--tokens", "1", "--reps", "1", "--svg",
                tmp_path / "no-such-dir" / "r.svg", check=False)
    assert p.returncode == 1 and "--svg" in p.stderr and "no-such-dir" in p.stderr
    assert "roofs (this run)" not in p.stdout


def test_help_documents_the_budget_and_the_picture(run_ffn):
    text = run_ffn("bench", "--help").stdout
    assert "--peer-budget" in text and "--svg" in text
