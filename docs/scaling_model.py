#!/usr/bin/env python3
"""The cost model of docs/scaling.md: one Llama-2-70B MLP layer (D = 8192, H = 28672) on one
machine against the same layer split across P machines (tensor parallelism), per forward.

  one machine:  t1 = max(W / B, F·T / C)
  P machines:   tP = max(W / (P·B), F·T / (P·C)) + t_ar
  all-reduce:   t_ar = 2(P−1)·α + 2(P−1)/P · T·D·b_a / β        (ring: reduce-scatter + all-gather)

W: weight bytes, F = 6·D·H FLOPs per token, C: compute roof, B: memory roof, b_a: bytes per
activation value, α: network latency per message, β: network bandwidth per machine.
Prints the speedup t1 / tP for each machine, token count, P and network.
Usage: docs/scaling_model.py [compute_gflops memory_gbps]  (this machine's measured roofs)
"""
import sys

D, H = 8192, 28672
F = 6 * D * H  # forward FLOPs per token (3 products, 2 per multiply-add)

# name, compute FLOP/s, memory B/s, bytes per weight, bytes per activation value
machines = [
    ("this VM (measured)", float(sys.argv[1]) * 1e9 if len(sys.argv) > 1 else 330e9,
     float(sys.argv[2]) * 1e9 if len(sys.argv) > 2 else 15e9, 4, 4),
    ("CPU server (assumed)", 4e12, 300e9, 4, 4),
    ("accelerator (assumed)", 400e12, 3000e9, 2, 2),
]
# name, β bytes/s, α seconds per message
networks = [("10 Gb/s", 1.25e9, 30e-6), ("100 Gb/s", 12.5e9, 10e-6), ("400 Gb/s", 50e9, 5e-6)]


def speedup(C, B, bw, ba, T, P, beta, alpha):
    W = 3 * D * H * bw
    t1 = max(W / B, F * T / C)
    t_ar = 2 * (P - 1) * alpha + 2 * (P - 1) / P * T * D * ba / beta
    tp = max(W / (P * B), F * T / (P * C)) + t_ar
    return t1 / tp, t1, tp


print("| machine | T | one machine, ms | " + " | ".join(
    f"P = {P}, {n}" for P in (2, 8) for n, _, _ in networks) + " |")
print("|---|---:|---:|" + "---:|" * 6)
for name, C, B, bw, ba in machines:
    for T in (1, 16, 256, 4096):
        cells = []
        t1 = None
        for P in (2, 8):
            for _, beta, alpha in networks:
                s, t1, _ = speedup(C, B, bw, ba, T, P, beta, alpha)
                cells.append(f"{s:.2f}")
        print(f"| {name} | {T} | {t1 * 1e3:.3g} | " + " | ".join(cells) + " |")
print()
for name, C, B, bw, ba in machines:
    print(f"{name}: TP pays in the compute-bound regime iff C < 3·H·β/b_a: "
          + ", ".join(f"{n}: {3 * H * beta / ba / 1e12:.1f} TFLOP/s" for n, beta, _ in networks)
          + f" (C = {C / 1e12:.2f} TFLOP/s); memory-bound up to T ≈ {C * bw / (2 * B):.0f} tokens")
