// The roofs' loops on zmm registers: compute, 24 FMA chains × 16 lanes (24 of the 32
// registers); memory, the read patterns of stream_read.hpp with 64-byte loads.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/stream_read.hpp"

namespace ffn::kernels {

float f32_fma_roof_avx512(int64_t iterations) { return f32_fma_roof<Avx512, 24>(iterations); }

float stream_read_avx512(const float* p, int64_t floats, int pattern) {
  return stream_read_pattern<Avx512Store>(p, floats, pattern);
}

}  // namespace ffn::kernels
