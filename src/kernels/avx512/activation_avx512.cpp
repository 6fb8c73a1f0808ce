// AVX-512 activations: the loops of activation_tiles.hpp over SLEEF's 16-lane functions.
// Compiled with -mavx512f -mavx2 -mfma (this file only); used only when the CPU has AVX-512F.
#include "kernels/activation_tiles.hpp"
#include "kernels/avx512/math_avx512.hpp"

namespace ffn::kernels {
const ActivationTable activation_table_avx512 = ActivationLoops<Avx512Math>::table;
}  // namespace ffn::kernels
