// Scalar activations: the loops of activation_tiles.hpp over libm (math_scalar.hpp).
#include "kernels/activation_tiles.hpp"
#include "kernels/scalar/scalar_kernels.hpp"
#include "kernels/scalar/math_scalar.hpp"

namespace ffn::kernels {
const F32ActivationRows f32_activation_rows_scalar = ActivationLoops<ScalarMath>::activation;
const F32GatedActivationRows f32_gated_activation_rows_scalar = ActivationLoops<ScalarMath>::gated;
const F32ActivationBackward f32_activation_backward_scalar = ActivationLoops<ScalarMath>::backward;
const F32GatedActivationBackward f32_gated_activation_backward_scalar = ActivationLoops<ScalarMath>::gated_backward;
const F32Erfc f32_erfc_scalar = ActivationLoops<ScalarMath>::erfc;
}  // namespace ffn::kernels
