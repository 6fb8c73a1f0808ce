// AVX2 activations: the loops of activation_tiles.hpp over SLEEF's 8-lane functions.
// Compiled with -mavx2 -mfma (this file only); used only when the CPU has AVX2 and FMA.
#include "kernels/activation_tiles.hpp"
#include "kernels/avx2/math_avx2.hpp"

namespace ffn::kernels {
const ActivationTable activation_table_avx2 = ActivationLoops<Avx2Math>::table;
}  // namespace ffn::kernels
