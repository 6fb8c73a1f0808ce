// Activations of T rows of K values quantised to q8_0 blocks for the integer kernels
// (kernels::Q8Rows; filled by kernels::quantize_q8_rows). Internal.
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

}  // namespace ffn
