"""python -m ffn.torch.bench: a Llama-shaped torch model (embedding, RMSNorm, causal attention,
the seeds' SwiGLU MLP, LM head) timed unpatched and patched by ffn.torch.patch, in one run:
forward at T = 1 and T = 128 for each weight type, and a training step (forward, backward,
AdamW) at T = 128 with the trainable patch, each beside one MLP alone (the seeds' module
against ffn's). Figures are ratios, unpatched time / patched time (> 1: ffn faster), medians of --reps after a warm-up, torch and ffn on the same thread
count; absolute times are printed only beside them (the machine is shared and noisy).

OpenBLAS (which Debian's torch calls) may not recognise the CPU and fall back to slow
kernels; unless OPENBLAS_CORETYPE is set, this re-runs itself with SkylakeX (AVX-512) or
Haswell (AVX2), so torch gets its best kernels.
"""
import argparse
import copy
import math
import os
import statistics
import sys
import time


def _coretype():
    flags = open("/proc/cpuinfo").read()
    return "SkylakeX" if " avx512f" in flags else "Haswell"


def build_model(d, layers, heads, vocab):
    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    class SwiGLU(nn.Module):  # the seeds' module
        def __init__(self, d, multiple=256):
            super().__init__()
            hidden = multiple * ((int(2 * (4 * d) / 3) + multiple - 1) // multiple)
            self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)

        def forward(self, x):
            return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = (p(x).view(B, T, self.heads, D // self.heads).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.heads)
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf")).softmax(-1)
            return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, D))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2, self.attn, self.mlp = RMSNorm(d), RMSNorm(d), Attention(d, heads), SwiGLU(d)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)
    return Model()


def median_ms(fns, reps):
    """Median ms of each of fns over reps, the functions interleaved (a slow spell of the shared
    machine hits all of them), after a warm-up of each."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [1e3 * statistics.median(t) for t in times]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ffn.torch.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=2048)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--dtypes", default="f32,bf16,q8_0,q4_0")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = p.parse_args(argv)
    if "OPENBLAS_CORETYPE" not in os.environ:
        os.environ["OPENBLAS_CORETYPE"] = _coretype()
        os.execv(sys.executable, [sys.executable, "-m", "ffn.torch.bench", *(sys.argv[1:] if argv is None else argv)])

    import torch
    import torch.nn.functional as F

    import ffn
    import ffn.torch as fft

    torch.set_num_threads(args.threads)
    # ffn's own pool (one thread per core) unless another count is asked for: a `threads`
    # count makes a pool per call.
    threads = None if args.threads == (os.cpu_count() or 1) else args.threads
    model = build_model(args.d, args.layers, args.heads, args.vocab).eval()
    mlp = model.layers[0].mlp
    print(f"model: d {args.d}, {args.layers} layers of attention ({args.heads} heads) + SwiGLU MLP (hidden "
          f"{mlp.gate.out_features}), vocab {args.vocab}; torch {torch.__version__} "
          f"(OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}), ffn {ffn.__version__} on {ffn.active_isa()}, "
          f"{args.threads} threads each; medians of {args.reps} after a warm-up")
    gen = torch.Generator().manual_seed(1)
    tokens = {T: torch.randint(0, args.vocab, (1, T), generator=gen) for T in (1, 128)}
    print(f"{'what':40s} {'T':>4s} {'torch ms':>9s} {'ffn ms':>9s} {'torch/ffn':>9s}")

    def row(what, T, base, ours):
        print(f"{what:40s} {T:4d} {base:9.2f} {ours:9.2f} {base / ours:9.2f}", flush=True)

    with torch.no_grad():
        for dtype in args.dtypes.split(","):
            patched = copy.deepcopy(model)
            report = fft.patch(patched, dtype=dtype, threads=threads)
            assert len(report.replaced) == args.layers, str(report)
            for T, tok in tokens.items():
                base, ours = median_ms([lambda: model(tok), lambda: patched(tok)], args.reps)
                row(f"model forward, MLPs {dtype}", T, base, ours)
                x = torch.randn(1, T, args.d, generator=gen)
                theirs, mine = model.layers[0].mlp, patched.layers[0].mlp
                base, ours = median_ms([lambda: theirs(x), lambda: mine(x)], args.reps)
                row(f"  one MLP alone, {dtype}", T, base, ours)
            del patched

    model.train()
    patched = copy.deepcopy(model)
    fft.patch(patched, inference=False, threads=threads)
    tok = torch.randint(0, args.vocab, (1, 129), generator=gen)

    def step_of(m):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

        def step():
            logits = m(tok[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), tok[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()

        return step

    base, ours = median_ms([step_of(model), step_of(patched)], args.reps)
    row("model training step (AdamW), MLPs f32", 128, base, ours)
    x = torch.randn(1, 128, args.d, generator=gen)
    dy = torch.randn(1, 128, args.d, generator=gen)
    theirs, mine = model.layers[0].mlp, patched.layers[0].mlp

    def mlp_step(m):
        def step():
            m.zero_grad()
            xg = x.clone().requires_grad_(True)
            m(xg).backward(dy)

        return step

    base, ours = median_ms([mlp_step(theirs), mlp_step(mine)], args.reps)
    row("  one MLP alone, forward + backward", 128, base, ours)


if __name__ == "__main__":
    main()
