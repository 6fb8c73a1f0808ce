// The compute-roof loop on zmm registers (24 chains × 16 lanes: 24 of the 32 registers). Compiled with -mavx512f -mfma.
#include "kernels/avx512/vec_avx512.hpp"
#include "kernels/f32_fma_roof.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

float f32_fma_roof_avx512(int64_t iterations) { return f32_fma_roof<Avx512, 24>(iterations); }

}  // namespace ffn::kernels
