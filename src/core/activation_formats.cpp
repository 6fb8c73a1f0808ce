// The activation formats: their buffers' layout and their quantisers (activation_formats.hpp).
#include "core/activation_formats.hpp"

#include <string>
#include <vector>

#include "core/ggml_blocks.hpp"
#include "core/quant.hpp"
#include "ffn/error.hpp"

namespace ffn {
namespace {

using kernels::ActivationRows;

constexpr int64_t kAlign = 64;
constexpr int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

[[noreturn]] void not_an_activation_format(WeightType f) {
  throw Error(std::string(weight_type_name(f)) + " is not an activation format (f32, bf16, q8_0 or q8_K)");
}

}  // namespace

int64_t activation_block(WeightType format) {
  switch (format) {
    case WeightType::f32:
      return 1;
    case WeightType::bf16:
      return 2;
    case WeightType::q8_0:
    case WeightType::q8_K:
      return weight_type_info(format).block_elements;
    default:
      not_an_activation_format(format);
  }
}

int64_t activation_bytes(WeightType format, int64_t T, int64_t K) {
  if (format == WeightType::f32) return 0;
  if (format == WeightType::bf16) return aligned(T * kernels::bf16_panel_rows(K) * 2);
  const int64_t block = activation_block(format);
  return aligned(T * K) + aligned(T * (K / block) * 4) + aligned(T * (K / 16) * 2);
}

ActivationRows activation_rows(WeightType format, std::byte* buffer, int64_t T, int64_t K, const float* x,
                               int64_t x_stride) {
  ActivationRows a;
  a.format = format;
  if (format == WeightType::f32) {
    a.values = reinterpret_cast<const std::byte*>(x);
    a.row_bytes = x_stride * 4;
    return a;
  }
  a.values = buffer;
  if (format == WeightType::bf16) {
    a.row_bytes = kernels::bf16_panel_rows(K) * 2;
    return a;
  }
  const int64_t block = activation_block(format);
  a.row_bytes = K;
  a.scales = reinterpret_cast<const float*>(buffer + aligned(T * K));
  a.scale_stride = K / block;
  a.sums = reinterpret_cast<const int16_t*>(buffer + aligned(T * K) + aligned(T * (K / block) * 4));
  a.sum_stride = K / 16;
  return a;
}

// The rows' buffer is the caller's (activation_rows made the view of it), so writing through
// the view's pointers is writing to that buffer.
void quantize_activations(const kernels::KernelTable& k, const ActivationRows& rows, int64_t t0, int64_t n, int64_t c0,
                          int64_t c1, const float* x, int64_t ldx) {
  const WeightType format = rows.format;
  if (format == WeightType::f32 || c1 <= c0 || n <= 0) return;
  if (format == WeightType::bf16) {
    auto* out = const_cast<uint16_t*>(rows.bf16()) + t0 * rows.bf16_stride() + c0;
    k.f32_to_bf16_rows(n, c1 - c0, x + c0, ldx, out, rows.bf16_stride());
    return;
  }
  const int64_t block = activation_block(format);
  for (int64_t t = 0; t < n; ++t) {
    const ActivationRows row = rows.from_token(t0 + t);
    auto* codes = const_cast<int8_t*>(row.codes()) + c0;
    auto* scales = const_cast<float*>(row.scales) + c0 / block;
    auto* sums = const_cast<int16_t*>(row.sums) + c0 / 16;
    const float* v = x + t * ldx + c0;
    if (k.f32_to_q8_rows(format, c1 - c0, v, codes, scales, sums)) continue;
    // A value the kernel cannot quantise: the reference says which (ffn::Error).
    if (format == WeightType::q8_K) {
      std::vector<BlockQ8_K> blocks(static_cast<size_t>((c1 - c0) / block));
      quantize_row_q8_K(v, blocks.data(), c1 - c0);
    } else {
      std::vector<BlockQ8_0> blocks(static_cast<size_t>((c1 - c0) / block));
      quantize_row_q8_0(v, blocks.data(), c1 - c0);
    }
    throw Error("quantize_activations: a row the quantisers accept was refused by " +
                std::string(k.f32_to_q8_rows.name));
  }
}

}  // namespace ffn
