// The roofs' loops on ymm registers: compute, 12 FMA chains × 8 lanes (12 of the 16
// registers); memory, the read patterns of stream_read.hpp with 32-byte loads.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/stream_read.hpp"

namespace ffn::kernels {

float f32_fma_roof_avx2(int64_t iterations) { return f32_fma_roof<Avx2, 12>(iterations); }

float stream_read_avx2(const float* p, int64_t floats, int pattern) {
  return stream_read_pattern<Avx2Store>(p, floats, pattern);
}

}  // namespace ffn::kernels
