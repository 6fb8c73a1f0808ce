// The scalar table: the plain-C++ reference of every op (but the AVX512_BF16 ones), which
// FFN_ISA=scalar runs and the wider tables start from.
#include "kernels/register.hpp"
#include "kernels/scalar/scalar_kernels.hpp"

namespace ffn::kernels {

const KernelTable& table_scalar() {
  static const KernelTable table = [] {
    KernelTable t{
        .isa = Isa::scalar,
        .f32_lanes = 1,
        .f32_roof_chains = 12,
        .f32_gemm_nt = FFN_KERNEL(f32_gemm_nt_scalar),
        // The reference has one form of the forward's product: it is also the packed one.
        .f32_gemm_nt_packed = FFN_KERNEL(f32_gemm_nt_scalar),
        .f32_panel_gemm = FFN_KERNEL(f32_panel_gemm_scalar),
        .f32_to_q8_rows = FFN_KERNEL(f32_to_q8_rows_scalar),
        .f32_gemm_nn = FFN_KERNEL(f32_gemm_nn_scalar),
        .f32_gemm_tn_add = FFN_KERNEL(f32_gemm_tn_add_scalar),
        .rows_to_panel32 = FFN_KERNEL(rows_to_panel32_scalar),
        .rows_to_panel16 = FFN_KERNEL(rows_to_panel16_scalar),
        .f32_activation_rows = FFN_KERNEL(f32_activation_rows_scalar),
        .f32_gated_activation_rows = FFN_KERNEL(f32_gated_activation_rows_scalar),
        .f32_activation_backward = FFN_KERNEL(f32_activation_backward_scalar),
        .f32_gated_activation_backward = FFN_KERNEL(f32_gated_activation_backward_scalar),
        .f32_erfc = FFN_KERNEL(f32_erfc_scalar),
        .f32_fma_roof = FFN_KERNEL(f32_fma_roof_scalar),
        .stream_read = FFN_KERNEL(stream_read_scalar),
        .rows_dot = FFN_KERNEL(rows_dot_scalar),
        .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_scalar),
        .rows_axpy = FFN_KERNEL(rows_axpy_scalar),
    };
    add_panel_kernel(t, WeightType::f32, f32_panel_kernel<f32_panel_gemm_scalar>, "f32_panel_gemm_scalar",
                     WeightType::f32, "f32 multiply and add");
    add_panel_kernel(t, WeightType::f16, f16_panel_gemm_scalar, "f16_panel_gemm_scalar", WeightType::f32,
                     "widened exactly, f32 multiply and add");
    add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_scalar, "bf16_panel_gemm_scalar", WeightType::f32,
                     "widened exactly, f32 multiply and add");
    FFN_PANEL_KERNELS(t, qblock, panel_gemm_scalar);
    FFN_PANEL_KERNELS(t, qsub, panel_gemm_scalar);
    return t;
  }();
  return table;
}

}  // namespace ffn::kernels
