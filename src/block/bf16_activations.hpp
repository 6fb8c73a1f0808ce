// Activations rounded to bf16 for AVX512_BF16's dot product, as the packed and the stored
// bf16 forwards take them: T rows of bf16_panel_rows(K) values, an odd K's row padded with
// a zero (kernels.hpp), in a buffer of the calling thread shared by the pool's workers
// (internal).
#pragma once

#include <cstdint>

#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {

// The calling thread's buffer in `slot` for T rows of K activations as bf16.
inline uint16_t* bf16_activation_rows(Scratch slot, int64_t T, int64_t K) {
  return reinterpret_cast<uint16_t*>(scratch_matrix(slot, T, kernels::bf16_panel_rows(K) / 2).data);
}

// out = x rounded to bf16 (nearest, ties to even), its rows split across the pool.
inline void round_rows_to_bf16(const kernels::KernelTable& k, ConstMatrixView x, uint16_t* out, ThreadPool& p) {
  p.run([&](int ith, int nth) {
    const auto [t0, t1] = split_range(x.rows, ith, nth);
    const int64_t ld = kernels::bf16_panel_rows(x.cols);
    if (t1 > t0) k.f32_to_bf16_rows(t1 - t0, x.cols, x.row(t0), x.stride, out + t0 * ld, ld);
  });
}

}  // namespace ffn
