// The activation entry points of kernels.hpp: each calls the active ISA's table entry, so
// forward, forward_train and backward use the same kernel.
#include "kernels/activation_kernels.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

void f32_activation_rows(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                         int64_t ld_out) {
  active_kernels().f32_activation_rows(a, rows, cols, in, ld_in, out, ld_out);
}

void f32_gated_activation_rows(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u,
                               int64_t ld_u, float* out, int64_t ld_out) {
  active_kernels().f32_gated_activation_rows(a, rows, cols, g, ld_g, u, ld_u, out, ld_out);
}

void f32_activation_backward(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n) {
  active_kernels().f32_activation_backward(a, z, dh, h, dz, n);
}

void f32_gated_activation_backward(Activation a, const float* g, const float* u, const float* dh, float* h, float* du,
                                   float* dg, int64_t n) {
  active_kernels().f32_gated_activation_backward(a, g, u, dh, h, du, dg, n);
}

}  // namespace ffn::kernels
