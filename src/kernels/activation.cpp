// The activation entry points of kernels.hpp: each forwards to the active ISA's table
// (activation_kernels.hpp), so forward, forward_train and backward use the same one.
#include <string>

#include "ffn/error.hpp"
#include "kernels/activation_kernels.hpp"
#include "kernels/kernels.hpp"

namespace ffn::kernels {

const ActivationTable& activation_table(Isa isa) {
  if (!isa_supported(isa)) throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  switch (isa) {
    case Isa::avx2:
      return activation_table_avx2;
    case Isa::avx512:
    case Isa::avx512_bf16:
      return activation_table_avx512;
    case Isa::scalar:
      break;
  }
  return activation_table_scalar;
}

void f32_activation_rows(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                         int64_t ld_out) {
  activation_table(active_isa()).activation(a, rows, cols, in, ld_in, out, ld_out);
}

void f32_gated_activation_rows(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u,
                               int64_t ld_u, float* out, int64_t ld_out) {
  activation_table(active_isa()).gated(a, rows, cols, g, ld_g, u, ld_u, out, ld_out);
}

void f32_activation_backward(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n) {
  activation_table(active_isa()).backward(a, z, dh, h, dz, n);
}

void f32_gated_activation_backward(Activation a, const float* g, const float* u, const float* dh, float* h, float* du,
                                   float* dg, int64_t n) {
  activation_table(active_isa()).gated_backward(a, g, u, dh, h, du, dg, n);
}

}  // namespace ffn::kernels
