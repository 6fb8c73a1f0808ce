// Activations in the format a panel kernel takes (internal): the formats are entries of the
// weight-type list (ffn/weight_type_list.hpp), as ggml's vec_dot_type is a type —
//   f32   the rows as they are (the forward's x or h, any row stride);
//   bf16  rounded to bf16 (the dot products of AVX512_BF16 and Arm's FEAT_BF16): rows of
//         bf16_panel_rows(K) values, an odd K's row ending in a zero, the padding a bf16 pair
//         panel's last pair reads;
//   q8_0  ggml's quantize_row_q8_0 of each 32 values (int8 codes, a binary16 scale kept as
//         f32), with the sums of each 16 consecutive codes — for the qblock panels and the
//         32-value qsub types (ggml dots Q4_1 and Q5_1 with its q8_1, whose codes and scale
//         are q8_0's and whose sum these sums give: one format serves both);
//   q8_K  ggml's quantize_row_q8_K of each 256 values (int8 codes, an f32 scale, the sums of
//         16), for the qsub types of 256-value blocks.
// T rows of K values laid out in one buffer (core/activation_formats.hpp), sections apart so
// that the kernels load whole vectors:
//   codes   [T][K]        int8 (q8) — or the f32 / bf16 values;
//   scales  [T][K/block]  f32, each block's scale (q8);
//   sums    [T][K/16]     int16, Σ of each 16 consecutive codes (q8).
// Block b of row t of the q8 formats is, field for field, ggml's block of x[t][b·block …].
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"

namespace ffn::kernels {

// bf16 rows hold K values padded to even (the pair layout of bf16 panels).
inline constexpr int64_t bf16_panel_rows(int64_t K) { return (K + 1) / 2 * 2; }

struct ActivationRows {
  WeightType format = WeightType::f32;
  const std::byte* values = nullptr;  // row t at values + t·row_bytes: f32, bf16 or int8 codes
  int64_t row_bytes = 0;
  const float* scales = nullptr;  // q8: row t's block scales at scales + t·scale_stride
  int64_t scale_stride = 0;       // K / block
  const int16_t* sums = nullptr;  // q8: row t's sums of 16 at sums + t·sum_stride
  int64_t sum_stride = 0;         // K / 16

  const float* f32() const { return reinterpret_cast<const float*>(values); }
  int64_t f32_stride() const { return row_bytes / 4; }
  const uint16_t* bf16() const { return reinterpret_cast<const uint16_t*>(values); }
  int64_t bf16_stride() const { return row_bytes / 2; }
  const int8_t* codes() const { return reinterpret_cast<const int8_t*>(values); }

  // The same rows from token t0 on.
  ActivationRows from_token(int64_t t0) const {
    ActivationRows a = *this;
    a.values += t0 * row_bytes;
    a.scales += t0 * scale_stride;
    a.sums += t0 * sum_stride;
    return a;
  }
};

}  // namespace ffn::kernels
