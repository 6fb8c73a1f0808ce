// The neon table (Advanced SIMD, 32 q registers of 4 floats): its own f32, 16-bit, activation,
// integer (SDOT's sums by widening multiplies), quantisation and roof kernels. rows_to_panel32 /
// rows_to_panel16 (bit copies) are the scalar table's, inherited.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable neon_entries() {
  KernelTable t{
      .isa = Isa::neon,
      .f32_lanes = 4,
      .f32_roof_chains = 24,
      .f32_gemm_nt = FFN_KERNEL(f32_gemm_nt_neon_4x4),
      .f32_gemm_nt_packed = FFN_KERNEL(f32_gemm_nt_packed_neon_6x16),
      .f32_panel_gemm = FFN_KERNEL(f32_panel_gemm_neon_1x64_6x16),
      .f32_to_q8_rows = FFN_KERNEL(f32_to_q8_rows_neon),
      .f32_gemm_nn = FFN_KERNEL(f32_gemm_nn_neon_6x16),
      .f32_gemm_tn_add = FFN_KERNEL(f32_gemm_tn_add_neon_6x16),
      .f32_activation_rows = FFN_KERNEL(f32_activation_rows_neon),
      .f32_gated_activation_rows = FFN_KERNEL(f32_gated_activation_rows_neon),
      .f32_activation_backward = FFN_KERNEL(f32_activation_backward_neon),
      .f32_gated_activation_backward = FFN_KERNEL(f32_gated_activation_backward_neon),
      .f32_erfc = FFN_KERNEL(f32_erfc_neon),
      .f32_fma_roof = FFN_KERNEL(f32_fma_roof_neon),
      .stream_read = FFN_KERNEL(stream_read_neon),
      .rows_dot = FFN_KERNEL(rows_dot_neon),
      .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_neon),
      .rows_axpy = FFN_KERNEL(rows_axpy_neon),
  };
  add_panel_kernel(t, WeightType::f32, f32_panel_kernel<f32_panel_gemm_neon_1x64_6x16>, "f32_panel_gemm_neon_1x64_6x16",
                   WeightType::f32, "f32 FMA");
  add_panel_kernel(t, WeightType::f16, f16_panel_gemm_neon_1x64_6x16, "f16_panel_gemm_neon_1x64_6x16", WeightType::f32,
                   "widened exactly in registers, f32 FMA");
  add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_neon_1x64_6x16, "bf16_panel_gemm_neon_1x64_6x16",
                   WeightType::f32, "widened exactly in registers, f32 FMA");
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_neon_1x64_4x8);
  FFN_PANEL_KERNELS(t, qsub, panel_gemm_neon_1x64_4x64);
  return t;
}

}  // namespace

const KernelTable& table_neon() {
  static const KernelTable table = inherit(table_scalar(), neon_entries());
  return table;
}

}  // namespace ffn::kernels
