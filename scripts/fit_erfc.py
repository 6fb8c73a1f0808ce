#!/usr/bin/env python3
"""Fits the polynomial of src/kernels/erfc_f32.hpp and prints its coefficients.

erfcx(a) = erfc(a)·exp(a²) = t·Q(t) with t = 1/(1 + a/2), for a in [0, 10.1]
(erfc(10.1) is below half of FLT_TRUE_MIN). Q has degree 9 and minimises the largest
relative error of t·Q(t) (Lawson's iteratively reweighted least squares on 3000
Chebyshev points of t). The coefficients are rounded to f32 one at a time, from the
highest degree down, the lower ones refitted after each rounding, so that the rounding
of each is absorbed by those after it (the final error is 0.6 ulp of f32).

Needs numpy (Debian: python3-numpy). Usage: scripts/fit_erfc.py [degree]
"""
import math
import sys

import numpy as np

A_MAX = 10.1
POINTS = 3000
LAWSON_STEPS = 150


def erfcx(a):
    # a is an f32 value held in a double, so a·a is exact and erfc(a)·exp(a²) is good to
    # ~1e-14 relative for a ≤ 10.1 (erfc(10.1) ≈ 6.6e−46 is far above double's range end).
    return np.array([math.erfc(x) * math.exp(x * x) for x in a])


def fit(degree):
    t_min = 1.0 / (1.0 + 0.5 * A_MAX)
    k = np.arange(POINTS)
    t = (1.0 + t_min) / 2 + (1.0 - t_min) / 2 * np.cos(np.pi * (k + 0.5) / POINTS)
    a = 2.0 * (1.0 / t - 1.0)
    q = erfcx(a) / t  # the target Q(t); relative errors of Q are those of t·Q(t)
    powers = np.vander(t, degree + 1)  # columns t^degree … t^0
    fixed = []
    for j in range(degree + 1):
        free = powers[:, j:]
        rest = q - (powers[:, :j] @ np.array(fixed) if fixed else 0.0)
        weights = np.ones_like(t)
        for _ in range(LAWSON_STEPS):
            scale = np.sqrt(weights) / q
            c, *_ = np.linalg.lstsq(free * scale[:, None], rest * scale, rcond=None)
            err = np.abs(free @ c - rest) / q
            weights = weights * (err + 1e-300)
            weights /= weights.sum()
        fixed.append(float(np.float32(c[0])))
    coefficients = np.array(fixed)
    worst = float(np.max(np.abs(powers @ coefficients - q) / q))
    return coefficients, worst


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    coefficients, worst = fit(degree)
    print("// Q(t), highest degree first; largest relative error %.3g (%.2f ulp of f32)" % (worst, worst / 2**-24))
    print("{" + ", ".join("%.9gf" % c for c in coefficients) + "}")


if __name__ == "__main__":
    main()
