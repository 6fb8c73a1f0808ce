// Scalar activations: the loops of activation_tiles.hpp over libm (math_scalar.hpp).
#include "kernels/activation_tiles.hpp"
#include "kernels/scalar/math_scalar.hpp"

namespace ffn::kernels {
const ActivationTable activation_table_scalar = ActivationLoops<ScalarMath>::table;
}  // namespace ffn::kernels
