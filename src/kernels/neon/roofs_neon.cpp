// The roofs' loops on q registers: compute, 24 FMA chains × 4 lanes (24 of the 32 registers:
// enough for 4 FMA pipes of 4 cycles' latency); memory, the read patterns of stream_read.hpp
// with 16-byte loads.
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/f32_fma_roof.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/vec_neon.hpp"
#include "kernels/stream_read.hpp"

namespace ffn::kernels {

float f32_fma_roof_neon(int64_t iterations) { return f32_fma_roof<Neon, 24>(iterations); }

float stream_read_neon(const float* p, int64_t floats, int pattern) {
  return stream_read_pattern<NeonStore>(p, floats, pattern);
}

}  // namespace ffn::kernels
