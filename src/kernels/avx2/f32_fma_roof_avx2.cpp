// The compute-roof loop on ymm registers (12 chains × 8 lanes: 12 of the 16 registers). Compiled with -mavx2 -mfma.
#include "kernels/avx2/vec_avx2.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

float f32_fma_roof_avx2(int64_t iterations) { return f32_fma_roof<Avx2, 12>(iterations); }

}  // namespace ffn::kernels
