// The avx512 table (32 zmm registers): its own f32, 16-bit and activation kernels and roof
// loops. The rest is avx2's, inherited: the integer kernels (AVX-512 ones need VNNI:
// avx512_vnni) and rows_to_panel32 / rows_to_panel16, which have no AVX-512 version.
#include "kernels/avx512/avx512_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx512_entries() {
  KernelTable t{
      .isa = Isa::avx512,
      .f32_lanes = 16,
      .f32_roof_chains = 24,
      .f32_gemm_nt = FFN_KERNEL(f32_gemm_nt_avx512_4x4),
      .f32_gemm_nt_packed = FFN_KERNEL(f32_gemm_nt_packed_avx512_6x64),
      .f32_panel_gemm = FFN_KERNEL(f32_panel_gemm_avx512_6x64_4x64),
      .f32_gemm_nn = FFN_KERNEL(f32_gemm_nn_avx512_8x32),
      .f32_gemm_tn_add = FFN_KERNEL(f32_gemm_tn_add_avx512_8x32),
      .f32_activation_rows = FFN_KERNEL(f32_activation_rows_avx512),
      .f32_gated_activation_rows = FFN_KERNEL(f32_gated_activation_rows_avx512),
      .f32_activation_backward = FFN_KERNEL(f32_activation_backward_avx512),
      .f32_gated_activation_backward = FFN_KERNEL(f32_gated_activation_backward_avx512),
      .f32_erfc = FFN_KERNEL(f32_erfc_avx512),
      .f32_fma_roof = FFN_KERNEL(f32_fma_roof_avx512),
      .stream_read = FFN_KERNEL(stream_read_avx512),
      .rows_dot = FFN_KERNEL(rows_dot_avx512),
      .rows_axpy = FFN_KERNEL(rows_axpy_avx512),
  };
  add_panel_kernel(t, WeightType::f32, f32_panel_kernel<f32_panel_gemm_avx512_6x64_4x64>,
                   "f32_panel_gemm_avx512_6x64_4x64", WeightType::f32, "f32 FMA");
  add_panel_kernel(t, WeightType::f16, f16_panel_gemm_avx512_6x64, "f16_panel_gemm_avx512_6x64", WeightType::f32,
                   "widened exactly in registers, f32 FMA");
  add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_avx512_6x64, "bf16_panel_gemm_avx512_6x64", WeightType::f32,
                   "widened exactly in registers, f32 FMA");
  return t;
}

}  // namespace

const KernelTable& table_avx512() {
  static const KernelTable table = inherit(table_avx2(), avx512_entries());
  return table;
}

}  // namespace ffn::kernels
