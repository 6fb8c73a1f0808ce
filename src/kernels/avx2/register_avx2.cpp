// The AVX2 + FMA table (16 ymm registers, hence tile shapes of its own): an AVX2 kernel for
// every op of the scalar table.
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx2_entries() {
  return {
      .isa = Isa::avx2,
      .f32_lanes = 8,
      .f32_roof_chains = 12,
      .f32_gemm_nt = FFN_KERNEL(f32_gemm_nt_avx2_3x3),
      .f32_gemm_nt_packed = FFN_KERNEL(f32_gemm_nt_packed_avx2_6x16),
      .f32_panel_gemm = FFN_KERNEL(f32_panel_gemm_avx2_2x64_3x32_6x16),
      .half_panel_gemm = FFN_KERNEL(half_panel_gemm_avx2_2x64_6x16),
      .f32_gemm_nn = FFN_KERNEL(f32_gemm_nn_avx2_6x16),
      .f32_gemm_tn_add = FFN_KERNEL(f32_gemm_tn_add_avx2_6x16),
      .q_panel_gemm = FFN_KERNEL(q_panel_gemm_avx2_1x64),
      .kq_panel_gemm = FFN_KERNEL(kq_panel_gemm_avx2_1x64),
      .rows_to_panel32 = FFN_KERNEL(rows_to_panel32_avx2),
      .rows_to_panel16 = FFN_KERNEL(rows_to_panel16_avx2),
      .f32_activation_rows = FFN_KERNEL(f32_activation_rows_avx2),
      .f32_gated_activation_rows = FFN_KERNEL(f32_gated_activation_rows_avx2),
      .f32_activation_backward = FFN_KERNEL(f32_activation_backward_avx2),
      .f32_gated_activation_backward = FFN_KERNEL(f32_gated_activation_backward_avx2),
      .f32_erfc = FFN_KERNEL(f32_erfc_avx2),
      .f32_fma_roof = FFN_KERNEL(f32_fma_roof_avx2),
      .stream_read = FFN_KERNEL(stream_read_avx2),
  };
}

}  // namespace

const KernelTable& table_avx2() {
  static const KernelTable table = inherit(table_scalar(), avx2_entries());
  return table;
}

}  // namespace ffn::kernels
