// What the panel kernels' tests share: activations in a kernel's format (through the library's
// own quantiser, core/activation_formats.hpp) with the values they stand for, rows of weights
// stored in a type with their exact values, and those rows laid into one panel.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/activation_formats.hpp"
#include "core/weight_type_table.hpp"
#include "ffn/tensor.hpp"
#include "kernels/kernels.hpp"
#include "random_data.hpp"

namespace ffn::test {

// T rows of K activations in `format`, and their values: the dequantised codes (q8), the
// rounded values (bf16) or the values themselves (f32).
struct Activations {
  AlignedFloats buffer;
  std::vector<float> source;  // the f32 rows quantised, [T][K]
  kernels::ActivationRows rows;
  std::vector<float> values;  // [T][K]
};

inline Activations quantise(WeightType format, int64_t T, int64_t K, std::vector<float> x, Isa isa = Isa::scalar) {
  Activations a;
  a.source = std::move(x);
  a.buffer = AlignedFloats(activation_bytes(format, T, K) / 4 + 16);
  a.rows = activation_rows(format, reinterpret_cast<std::byte*>(a.buffer.data()), T, K, a.source.data(), K);
  quantize_activations(kernels::kernel_table(isa), a.rows, 0, T, 0, K, a.source.data(), K);
  a.values.resize(size_t(T * K));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      const kernels::ActivationRows row = a.rows.from_token(t);
      float v = 0;
      if (format == WeightType::f32)
        v = row.f32()[k];
      else if (format == WeightType::bf16)
        v = bf16_to_f32(row.bf16()[k]);
      else
        v = float(row.codes()[k]) * row.scales[k / (K / row.scale_stride)];
      a.values[size_t(t * K + k)] = v;
    }
  return a;
}

// Weights [N][K] stored as type t (by its codec), and their exact values.
struct StoredRows {
  std::vector<std::byte> bytes;
  int64_t row_bytes;
  std::vector<float> values;
};

inline StoredRows store(WeightType t, int64_t N, int64_t K, uint32_t seed) {
  const auto w = random_vector(size_t(N * K), seed);
  const auto& traits = weight_type_traits(t);
  const int64_t row_bytes = traits.info.row_bytes(K);
  StoredRows s{std::vector<std::byte>(size_t(N * row_bytes)), row_bytes, std::vector<float>(size_t(N * K))};
  for (int64_t n = 0; n < N; ++n) traits.from_f32(w.data() + n * K, s.bytes.data() + n * row_bytes, K);
  for (int64_t n = 0; n < N; ++n) traits.to_f32(s.bytes.data() + n * row_bytes, s.values.data() + n * K, K);
  return s;
}

// N ≤ 64 stored rows of K values laid into one panel of their type (64-byte aligned).
struct Panel {
  AlignedFloats storage;
  const std::byte* data() const { return reinterpret_cast<const std::byte*>(storage.data()); }
};
inline Panel pack(WeightType t, const std::byte* bytes, int64_t row_bytes, int64_t N, int64_t K,
                  Isa isa = Isa::scalar) {
  const auto& traits = weight_type_traits(t);
  Panel p{AlignedFloats((traits.panel_bytes(K) + 3) / 4)};
  traits.rows_into_panel(kernels::kernel_table(isa), bytes, row_bytes, N, K,
                         reinterpret_cast<std::byte*>(p.storage.data()), 0);
  return p;
}
inline Panel pack(WeightType t, const StoredRows& w, int64_t N, int64_t K, Isa isa = Isa::scalar) {
  return pack(t, w.bytes.data(), w.row_bytes, N, K, isa);
}

// A panel kernel given no values (K = 0) for T tokens, C of T + 1 rows starting as NaN: ""
// when it wrote C = 0 to the T rows and left the row beyond them alone, else the first
// element that is otherwise.
inline std::string error_with_no_values(const kernels::PanelKernel& kernel, int64_t T) {
  kernels::ActivationRows none;
  none.format = kernel.activations;
  const std::byte no_panel{};
  std::vector<float> c(size_t((T + 1) * kernels::kPanelWidth), std::nanf(""));
  kernel.fn(T, 0, none, &no_panel, c.data(), kernels::kPanelWidth);
  for (int64_t i = 0; i < (T + 1) * kernels::kPanelWidth; ++i)
    if (i < T * kernels::kPanelWidth ? c[size_t(i)] != 0.0f : !std::isnan(c[size_t(i)]))
      return "element " + std::to_string(i) + " is " + std::to_string(c[size_t(i)]);
  return "";
}

}  // namespace ffn::test
