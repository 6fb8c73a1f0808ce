"""One mixture-of-experts layer at a real model's shape, ffn against the way Hugging Face
computes it (a loop over the experts that got tokens, each on its tokens, index_add_ into
the output; PyTorch on the same threads), on the same random weights, timed alternately in
one sitting.

    build-venv/bin/python bench/moe_vs_torch.py --preset qwen3-30b-a3b --tokens 1,16,64,256
    (FFN_PYTHONPATH=build/python is the default; --threads defaults to the cores)

The layer is written once as a Hugging Face checkpoint (safetensors + config.json, f32 or
bf16) into a temporary folder and loaded by ffn.load, so ffn runs what a user's file gives
it. Prints per T: ms of each (median of --reps after a warm-up), and torch / ffn.
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("FFN_PYTHONPATH", str(ROOT / "build" / "python")))
sys.path.insert(0, str(ROOT / "tests" / "golden"))
import ffn  # noqa: E402
from files import write_safetensors  # noqa: E402

# d_model, expert hidden, experts, k, renormalised (softmax routing, no shared experts).
SHAPES = {
    "mixtral-8x7b": (4096, 14336, 8, 2, True),
    "qwen3-30b-a3b": (2048, 768, 128, 8, True),
    "qwen3-235b-a22b": (4096, 1536, 128, 8, True),
}


def hf_moe(x, router, w_gate, w_up, w_down, k, renormalise):
    """Mixtral's / Qwen3-MoE's sparse block as transformers computes it."""
    logits = x @ router.T
    p = torch.softmax(logits, dim=-1, dtype=torch.float32)
    weights, chosen = torch.topk(p, k, dim=-1)
    if renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    weights = weights.to(x.dtype)
    out = torch.zeros_like(x)
    mask = torch.nn.functional.one_hot(chosen, num_classes=router.shape[0]).permute(2, 1, 0)
    for e in torch.nonzero(mask.sum(dim=(-1, -2)) > 0).flatten().tolist():
        slot, token = torch.where(mask[e])
        xe = x[token]
        ye = (torch.nn.functional.silu(xe @ w_gate[e].T) * (xe @ w_up[e].T)) @ w_down[e].T
        out.index_add_(0, token, ye * weights[token, slot, None])
    return out


def median_ms(fn, reps):
    fn()
    start = time.perf_counter()
    while time.perf_counter() - start < 0.1:
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="qwen3-30b-a3b", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--tokens", default="1,16,64,256")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    D, H, E, k, renorm = SHAPES[a.preset]
    dt = torch.float32 if a.dtype == "f32" else torch.bfloat16
    g = torch.Generator().manual_seed(0)
    router = (torch.rand(E, D, generator=g) * 2 - 1) / D**0.5
    w_gate = ((torch.rand(E, H, D, generator=g) * 2 - 1) / D**0.5).to(dt)
    w_up = ((torch.rand(E, H, D, generator=g) * 2 - 1) / D**0.5).to(dt)
    w_down = ((torch.rand(E, D, H, generator=g) * 2 - 1) / H**0.5).to(dt)
    with tempfile.TemporaryDirectory() as tmp:
        tensors = {"model.layers.0.mlp.gate.weight": router}
        for e in range(E):
            p = f"model.layers.0.mlp.experts.{e}."
            tensors[p + "gate_proj.weight"], tensors[p + "up_proj.weight"] = w_gate[e], w_up[e]
            tensors[p + "down_proj.weight"] = w_down[e]
        write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
        del tensors
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump({"model_type": "qwen3_moe", "hidden_act": "silu", "num_experts": E, "num_experts_per_tok": k,
                       "moe_intermediate_size": H, "norm_topk_prob": renorm}, f)
        m = ffn.load(tmp)
    print(f"{a.preset}: D {D}, expert hidden {H}, {E} experts, top {k}, {a.dtype}, {a.threads} threads, "
          f"ffn {ffn.active_isa()}, torch {torch.__version__}")
    print(f"{'T':>6} {'ffn ms':>10} {'torch ms':>10} {'torch/ffn':>10}")
    router_t = router.to(dt)
    for T in [int(t) for t in a.tokens.split(",")]:
        x = np.random.default_rng(T).uniform(-1, 1, (T, D)).astype(np.float32)
        xt = torch.from_numpy(x).to(dt)
        with torch.inference_mode():
            t_torch = median_ms(lambda: hf_moe(xt, router_t, w_gate, w_up, w_down, k, renorm), a.reps)
        t_ffn = median_ms(lambda: m(x, threads=a.threads), a.reps)
        print(f"{T:>6} {t_ffn:>10.2f} {t_torch:>10.2f} {t_torch / t_ffn:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
