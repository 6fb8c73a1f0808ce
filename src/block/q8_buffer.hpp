// Activations of T rows of K values quantised to q8_0 blocks for the integer kernels
// (kernels::Q8Rows; filled by kernels::quantize_q8_rows), or to q8_K blocks for the K-quant
// kernels (kernels::Q8KRows; kernels::quantize_q8k_rows). Internal.
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/quant.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

struct Q8Buffer {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> corr;
  Q8Buffer() = default;
  Q8Buffer(int64_t T, int64_t K)
      : qs(static_cast<size_t>(T * K)),
        d(static_cast<size_t>(T * K / kQuantBlock)),
        corr(static_cast<size_t>(T * K / 4)) {}
  kernels::Q8Rows rows() const { return {qs.data(), d.data(), corr.data()}; }
};

struct Q8KBuffer {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int16_t> bsums;
  Q8KBuffer() = default;
  Q8KBuffer(int64_t T, int64_t K, int64_t block)
      : qs(static_cast<size_t>(T * K)), d(static_cast<size_t>(T * K / block)), bsums(static_cast<size_t>(T * K / 16)) {}
  kernels::Q8KRows rows() const { return {qs.data(), d.data(), bsums.data()}; }
};

}  // namespace ffn
