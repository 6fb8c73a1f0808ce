// AVX-512 activations: the loops of activation_tiles.hpp over SLEEF's 16-lane functions.
// Compiled with the avx512 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include "kernels/activation_tiles.hpp"
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/avx512/math_avx512.hpp"

namespace ffn::kernels {
const F32ActivationRows f32_activation_rows_avx512 = ActivationLoops<Avx512Math>::activation;
const F32GatedActivationRows f32_gated_activation_rows_avx512 = ActivationLoops<Avx512Math>::gated;
const F32ActivationBackward f32_activation_backward_avx512 = ActivationLoops<Avx512Math>::backward;
const F32GatedActivationBackward f32_gated_activation_backward_avx512 = ActivationLoops<Avx512Math>::gated_backward;
const F32Erfc f32_erfc_avx512 = ActivationLoops<Avx512Math>::erfc;
}  // namespace ffn::kernels
