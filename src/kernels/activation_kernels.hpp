// The activation kernels of each ISA (one table per ISA, loops in activation_tiles.hpp),
// behind the dispatching f32_activation* functions of kernels.hpp. Contracts:
//   activation(a, rows, cols, in, ld_in, out, ld_out):
//                                             out[r][i] = act(in[r][i])
//   gated(a, rows, cols, g, ld_g, u, ld_u, out, ld_out):
//                                             out[r][i] = act(g[r][i]) · u[r][i]
//     (r < rows, i < cols; a matrix's rows are ld floats apart; one call takes a whole
//     tile, so a forward calls once per panel rather than once per token)
//   backward(a, z, dh, h, dz, n):             h[i] = act(z[i]);  dz[i] = dh[i] · act'(z[i])
//   gated_backward(a, g, u, dh, h, du, dg, n): h[i] = act(g[i]) · u[i];  du[i] = dh[i] · act(g[i]);
//                                             dg[i] = (dh[i] · u[i]) · act'(g[i])
// Outputs must not overlap inputs, except that out may be in (or u) exactly: the same
// pointer and stride, updated in place. Accuracy per element: the formula's few f32
// roundings plus its exp / erfc / tanh (libm in scalar; SLEEF's u10 exp / tanh and
// erfc_f32.hpp's erfc, ≤ 6 ulp, in AVX2 and AVX-512): tested in test_activation.cpp.
#pragma once

#include <cstdint>

#include "ffn/config.hpp"
#include "ffn/isa.hpp"

namespace ffn::kernels {

struct ActivationTable {
  void (*activation)(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                     int64_t ld_out);
  void (*gated)(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u, int64_t ld_u,
                float* out, int64_t ld_out);
  void (*backward)(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n);
  void (*gated_backward)(Activation a, const float* g, const float* u, const float* dh, float* h, float* du, float* dg,
                         int64_t n);
  // out[i] = erfc(z[i]) as the gelu formulas evaluate it (its own bound is tested in
  // test_erfc.cpp).
  void (*erfc)(const float* z, float* out, int64_t n);
};

extern const ActivationTable activation_table_scalar;
extern const ActivationTable activation_table_avx2;
extern const ActivationTable activation_table_avx512;

// The table of one ISA (which must be supported: ffn::Error otherwise).
const ActivationTable& activation_table(Isa isa);

}  // namespace ffn::kernels
