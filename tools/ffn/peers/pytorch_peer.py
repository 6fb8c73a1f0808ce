"""The PyTorch peer of ffn bench --peers: the seeds' module code (seeds.py, shipped beside
this script) for one block, eval mode, no autograd, timed per token count; f32, or bf16
(module and input cast to torch.bfloat16, as a user runs a bf16 checkpoint).

    python3 pytorch_peer.py --variant swiglu --d 4096 --hidden 11008 --tokens 1,16,256 \
        --threads 2 --reps 5 [--dtype bf16] [--budget 20]

prints {"timing": T} just before each token count's warm-up forward (ffn bench's deadline
for the row runs from there), then one JSON object: {"library": "PyTorch 1.13",
"ms": {"1": 45.1, ...}, "reps": {"1": 5, ...}, "over_budget": {"1024": 52000.0}} — median ms
per T, of as many repetitions (at most --reps) as fit in --budget seconds after the warm-up;
a T whose warm-up forward alone took longer than the budget is not timed, and over_budget
gives its warm-up's ms. The caller sets OPENBLAS_CORETYPE so that OpenBLAS uses its best
kernels for this CPU."""
import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import seeds  # noqa: E402  (the seeds' modules, as the golden suite uses them)
import torch  # noqa: E402


def timed(reps, budget_s, run):
    """(median ms, repetitions, warm-up ms): a warm-up forward, then as many of `reps`
    repetitions as its time says fit in budget_s; (None, 0, warm-up ms) when the warm-up
    alone took longer than the budget."""
    start = time.perf_counter()
    run()  # warm-up
    warm = time.perf_counter() - start
    if budget_s is not None:
        if warm > budget_s:
            return None, 0, warm * 1e3
        reps = max(1, min(reps, int(budget_s // max(warm, 1e-9))))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2], reps, warm * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", required=True, choices=sorted(seeds.VARIANTS))
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--budget", type=float, default=None, help="seconds for each T's timed repetitions")
    ap.add_argument("--no-onednn", action="store_true",
                    help="oneDNN off (torch.backends.mkldnn): bf16 matmuls in ATen's own GEMM, as PyTorch runs "
                         "them on a CPU without AVX-512 (ffn bench passes it under FFN_ISA=avx2)")
    a = ap.parse_args()
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    torch.set_num_threads(a.threads)
    if a.no_onednn:
        torch.backends.mkldnn.enabled = False
    torch.manual_seed(0)
    cls, _ = seeds.VARIANTS[a.variant]
    block = cls(a.d, hidden=a.hidden).eval().to(dtype)
    ms, reps, over_budget = {}, {}, {}
    with torch.no_grad():
        for t in (int(v) for v in a.tokens.split(",") if v):
            x = (torch.rand(t, a.d) * 2 - 1).to(dtype)
            print(json.dumps({"timing": t}), flush=True)
            median, n, warm_ms = timed(a.reps, a.budget, lambda: block(x))
            if median is None:
                over_budget[str(t)] = warm_ms
            else:
                ms[str(t)], reps[str(t)] = median, n
    print(json.dumps({"library": "PyTorch " + torch.__version__.split("+")[0], "ms": ms, "reps": reps,
                      "over_budget": over_budget}))


if __name__ == "__main__":
    main()
