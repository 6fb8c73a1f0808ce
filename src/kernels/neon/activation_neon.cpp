// Advanced SIMD activations: the loops of activation_tiles.hpp over SLEEF's 4-lane advsimd
// functions (math_neon.hpp).
// Compiled with the neon level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/activation_tiles.hpp"
#include "kernels/neon/math_neon.hpp"
#include "kernels/neon/neon_kernels.hpp"

namespace ffn::kernels {
const F32ActivationRows f32_activation_rows_neon = ActivationLoops<NeonMath>::activation;
const F32GatedActivationRows f32_gated_activation_rows_neon = ActivationLoops<NeonMath>::gated;
const F32ActivationBackward f32_activation_backward_neon = ActivationLoops<NeonMath>::backward;
const F32GatedActivationBackward f32_gated_activation_backward_neon = ActivationLoops<NeonMath>::gated_backward;
const F32Erfc f32_erfc_neon = ActivationLoops<NeonMath>::erfc;
}  // namespace ffn::kernels
