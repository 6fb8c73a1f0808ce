// Plain C++ integer GEMM (q8_0 / q4_0 weights × q8_0 activations), the scalar reference:
// the arithmetic of the contract in kernels.hpp written out lane by lane — 16 f32 lane
// accumulators, exact integer sums of 4 products, one fused multiply-add per lane and
// block (std::fma, which rounds once like vfmadd), then the fixed 16-lane tree — so the
// vector kernels must agree with it bit for bit. Compiled for baseline x86-64.
#include <cmath>

#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {
namespace {

// Value j (0…31) of a block as a signed integer.
int weight_at(const BlockQ8_0& b, int j) { return b.qs[j]; }
int weight_at(const BlockQ4_0& b, int j) {
  const int q = j < 16 ? (b.qs[j] & 0x0F) : (b.qs[j - 16] >> 4);
  return q - 8;
}

float reduce16(const float (&a)[16]) {
  float h[8], q[4], r[2];
  for (int i = 0; i < 8; ++i) h[i] = a[i] + a[i + 8];
  for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
  for (int i = 0; i < 2; ++i) r[i] = q[i] + q[i + 2];
  return r[0] + r[1];
}

template <class Block>
void gemm(int64_t T, int64_t N, int64_t K, const Q8Rows& A, const Block* B, int64_t ldb, float* C, int64_t ldc) {
  const int64_t blocks = K / 32;
  for (int64_t n = 0; n < N; ++n) {
    const Block* w = B + n * ldb;
    for (int64_t t = 0; t < T; ++t) {
      const int8_t* x = A.qs + t * K;
      const float* dx = A.d + t * blocks;
      float acc[16] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const float s = f16_to_f32(w[b].d) * dx[b];
        float* lanes = acc + 8 * (b % 2);
        for (int l = 0; l < 8; ++l) {
          int32_t sum = 0;
          for (int j = 4 * l; j < 4 * l + 4; ++j) sum += weight_at(w[b], j) * x[32 * b + j];
          lanes[l] = std::fma(static_cast<float>(sum), s, lanes[l]);
        }
      }
      C[t * ldc + n] = reduce16(acc);
    }
  }
}

}  // namespace

void q_gemm_nt_scalar(WeightType type, int64_t T, int64_t N, int64_t K, Q8Rows A, const void* B, int64_t ldb, float* C,
                      int64_t ldc) {
  if (type == WeightType::q8_0)
    gemm(T, N, K, A, static_cast<const BlockQ8_0*>(B), ldb, C, ldc);
  else
    gemm(T, N, K, A, static_cast<const BlockQ4_0*>(B), ldb, C, ldc);
}

}  // namespace ffn::kernels
