"""The PyTorch peer of ffn bench --peers: the seeds' module code (seeds.py, shipped beside
this script) for one block, eval mode, no autograd, timed per token count; f32, or bf16
(module and input cast to torch.bfloat16, as a user runs a bf16 checkpoint).

    python3 pytorch_peer.py --variant swiglu --d 4096 --hidden 11008 --tokens 1,16,256 \
        --threads 2 --reps 5 [--dtype bf16]

prints one JSON object: {"library": "PyTorch 1.13", "ms": {"1": 45.1, ...}} (median ms per T).
The caller sets OPENBLAS_CORETYPE so that OpenBLAS uses its best kernels for this CPU."""
import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import seeds  # noqa: E402  (the seeds' modules, as the golden suite uses them)
import torch  # noqa: E402


def median_ms(reps, run):
    run()  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", required=True, choices=sorted(seeds.VARIANTS))
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    a = ap.parse_args()
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cls, _ = seeds.VARIANTS[a.variant]
    block = cls(a.d, hidden=a.hidden).eval().to(dtype)
    ms = {}
    with torch.no_grad():
        for t in (int(v) for v in a.tokens.split(",") if v):
            x = (torch.rand(t, a.d) * 2 - 1).to(dtype)
            ms[str(t)] = median_ms(a.reps, lambda: block(x))
    print(json.dumps({"library": "PyTorch " + torch.__version__.split("+")[0], "ms": ms}))


if __name__ == "__main__":
    main()
