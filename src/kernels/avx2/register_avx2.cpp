// The avx2 table (16 ymm registers, hence tile shapes of its own): an AVX2 kernel for every
// op of the scalar table.
#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx2_entries() {
  KernelTable t{
      .isa = Isa::avx2,
      .f32_lanes = 8,
      .f32_roof_chains = 12,
      .int8_roof_chains = 12,
      .int8_roof_lanes = 8,
      .f32_gemm_nt = FFN_KERNEL(f32_gemm_nt_avx2_3x3),
      .f32_gemm_nt_packed = FFN_KERNEL(f32_gemm_nt_packed_avx2_6x16),
      .f32_panel_gemm = FFN_KERNEL(f32_panel_gemm_avx2_2x64_1x64_3x32_6x16),
      .f32_to_q8_rows = FFN_KERNEL(f32_to_q8_rows_avx2),
      .f32_gemm_nn = FFN_KERNEL(f32_gemm_nn_avx2_6x16),
      .f32_gemm_tn_add = FFN_KERNEL(f32_gemm_tn_add_avx2_6x16),
      .rows_to_panel32 = FFN_KERNEL(rows_to_panel32_avx2),
      .rows_to_panel16 = FFN_KERNEL(rows_to_panel16_avx2),
      .f32_activation_rows = FFN_KERNEL(f32_activation_rows_avx2),
      .f32_gated_activation_rows = FFN_KERNEL(f32_gated_activation_rows_avx2),
      .f32_activation_backward = FFN_KERNEL(f32_activation_backward_avx2),
      .f32_gated_activation_backward = FFN_KERNEL(f32_gated_activation_backward_avx2),
      .f32_erfc = FFN_KERNEL(f32_erfc_avx2),
      .f32_fma_roof = FFN_KERNEL(f32_fma_roof_avx2),
      .int8_dot_roof = FFN_KERNEL(int8_dot_roof_avx2),
      .stream_read = FFN_KERNEL(stream_read_avx2),
      .rows_dot = FFN_KERNEL(rows_dot_avx2),
      .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_avx2),
      .rows_axpy = FFN_KERNEL(rows_axpy_avx2),
  };
  add_panel_kernel(t, WeightType::f32, f32_panel_kernel<f32_panel_gemm_avx2_2x64_1x64_3x32_6x16>,
                   "f32_panel_gemm_avx2_2x64_1x64_3x32_6x16", WeightType::f32, "f32 FMA");
  add_panel_kernel(t, WeightType::f16, f16_panel_gemm_avx2_2x64_1x64_6x16, "f16_panel_gemm_avx2_2x64_1x64_6x16",
                   WeightType::f32, "widened exactly in registers, f32 FMA");
  add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_avx2_2x64_6x16, "bf16_panel_gemm_avx2_2x64_6x16",
                   WeightType::f32, "widened exactly in registers, f32 FMA");
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_avx2_1x64);
  FFN_PANEL_KERNELS(t, qsub, panel_gemm_avx2_1x64_2x32);
  return t;
}

}  // namespace

const KernelTable& table_avx2() {
  static const KernelTable table = inherit(table_scalar(), avx2_entries());
  return table;
}

}  // namespace ffn::kernels
