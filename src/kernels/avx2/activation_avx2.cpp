// AVX2 activations: the loops of activation_tiles.hpp over SLEEF's 8-lane functions.
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/activation_tiles.hpp"
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/math_avx2.hpp"

namespace ffn::kernels {
const F32ActivationRows f32_activation_rows_avx2 = ActivationLoops<Avx2Math>::activation;
const F32GatedActivationRows f32_gated_activation_rows_avx2 = ActivationLoops<Avx2Math>::gated;
const F32ActivationBackward f32_activation_backward_avx2 = ActivationLoops<Avx2Math>::backward;
const F32GatedActivationBackward f32_gated_activation_backward_avx2 = ActivationLoops<Avx2Math>::gated_backward;
const F32Erfc f32_erfc_avx2 = ActivationLoops<Avx2Math>::erfc;
}  // namespace ffn::kernels
