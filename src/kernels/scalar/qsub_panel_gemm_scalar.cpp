// Plain C++ product with a qsub panel packed at load, the reference of the qsub panel kernels
// (layout, integers and arithmetic in qsub_panels.hpp): the exact integers I and M of each
// block, then std::fma (rounded once, as vfmadd), blocks in order. Each row's block is read
// out of the panel once and dotted with every token.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant.hpp"
#include "kernels/qsub_panels.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {
namespace {

template <WeightType W>
void panel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  constexpr QFormat f = q_format(W);
  constexpr QSubLayout L = qsub_layout(f);
  const int64_t blocks = K / f.block;
  auto half = [](const uint8_t* p, int64_t j) {
    uint16_t h;
    std::memcpy(&h, p + 2 * j, 2);
    return f16_to_f32(h);
  };
  std::vector<float> acc(static_cast<size_t>(T));
  int32_t q[kSuperBlockValues];
  for (int64_t j = 0; j < kPanelWidth; ++j) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(P + b * L.bytes);
      // Value i of sub-block u of row j.
      for (int u = 0; u < f.subs(); ++u) {
        const uint8_t* v = blk + L.q_of(f, u);
        const uint8_t* hv = blk + L.h_of(u);
        for (int i = 0; i < f.sub; ++i) {
          const int g = i / 4;
          const int64_t at = 4 * j + i % 4;
          q[u * f.sub + i] = f.nibbles
                                 ? qsub_value(f, g, v[pair_offset(f, g % (f.sub / 8)) + at], f.high_bits ? hv[at] : 0)
                                 : v[g * 256 + at];
        }
      }
      const float d = f.e8m0 ? e8m0_half_to_f32(blk[j]) : half(blk, j), dmin = f.has_min ? half(blk + L.dmin, j) : 0.0f;
      for (int64_t t = 0; t < T; ++t) {
        const int8_t* x = A.codes() + t * K + b * f.block;
        const int16_t* bs = A.sums + t * (K / 16) + b * (f.block / 16);
        int32_t I = 0, M = 0;
        for (int u = 0; u < f.subs(); ++u) {
          int32_t B = 0;
          for (int s = 0; s < f.sub / 16; ++s) B += bs[u * f.sub / 16 + s];
          int32_t S = -f.offset * B;
          for (int i = 0; i < f.sub; ++i) S += q[u * f.sub + i] * x[u * f.sub + i];
          I += (f.stores_scales() ? int32_t(reinterpret_cast<const int8_t*>(blk + L.sc)[u * 64 + j]) : 1) * S;
          if (f.has_min) M += (f.stores_mins() ? int32_t(blk[L.m + u * 64 + j]) : 1) * B;
        }
        const float dx = A.scales[t * blocks + b];
        float a = std::fma(static_cast<float>(I), d * dx, acc[size_t(t)]);
        if (f.has_min) a = std::fma(static_cast<float>(M), -(dmin * dx), a);
        acc[size_t(t)] = a;
      }
    }
    for (int64_t t = 0; t < T; ++t) C[t * ldc + j] = acc[size_t(t)];
  }
}

}  // namespace

FFN_PANEL_KERNEL_SET(qsub, panel_gemm_scalar, panel);

}  // namespace ffn::kernels
