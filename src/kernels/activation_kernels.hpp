// The activation kernels of each ISA (loops in activation_tiles.hpp), entries of the
// kernel tables (kernels.hpp) behind the f32_activation* functions there. Contracts:
//   f32_activation_rows_<isa>(a, rows, cols, in, ld_in, out, ld_out):
//                                             out[r][i] = act(in[r][i])
//   f32_gated_activation_rows_<isa>(a, rows, cols, g, ld_g, u, ld_u, out, ld_out):
//                                             out[r][i] = act(g[r][i]) · u[r][i]
//     (r < rows, i < cols; a matrix's rows are ld floats apart; one call takes a whole
//     tile, so a forward calls once per panel rather than once per token)
//   f32_activation_backward_<isa>(a, z, dh, h, dz, n):
//                                             h[i] = act(z[i]);  dz[i] = dh[i] · act'(z[i])
//   f32_gated_activation_backward_<isa>(a, g, u, dh, h, du, dg, n):
//                                             h[i] = act(g[i]) · u[i];  du[i] = dh[i] · act(g[i]);
//                                             dg[i] = (dh[i] · u[i]) · act'(g[i])
//     clamped_swish (gpt-oss): u is v(u) = clamp(u, −7, 7) + 1 above; du[i] = (dh[i] ·
//     act(g[i])) · [−7 ≤ u[i] ≤ 7]; act(g) = m·σ(1.702·m), m = min(g, 7), act' = 0 for g > 7
//   f32_erfc_<isa>(z, out, n):                out[i] = erfc(z[i]) as the gelu formulas
//                                             evaluate it (its bound: test_erfc.cpp)
// Outputs must not overlap inputs, except that out may be in (or u) exactly: the same
// pointer and stride, updated in place. Accuracy per element: the formula's few f32
// roundings plus its exp / erfc / tanh (libm in scalar; SLEEF's u10 exp / tanh and
// erfc_f32.hpp's erfc, ≤ 6 ulp, in AVX2 and AVX-512): tested in test_activation.cpp.
#pragma once

#include <cstdint>

#include "ffn/config.hpp"
#include "ffn/isa.hpp"
#include "kernels/named.hpp"

namespace ffn::kernels {

using F32ActivationRows = void (*)(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                                   int64_t ld_out);
using F32GatedActivationRows = void (*)(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g,
                                        const float* u, int64_t ld_u, float* out, int64_t ld_out);
using F32ActivationBackward = void (*)(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n);
using F32GatedActivationBackward = void (*)(Activation a, const float* g, const float* u, const float* dh, float* h,
                                            float* du, float* dg, int64_t n);
using F32Erfc = void (*)(const float* z, float* out, int64_t n);

}  // namespace ffn::kernels
