// The AVX512_BF16 table: the avx512_vnni table plus the bf16 dot product, with which
// packed bf16 blocks dot activations rounded to bf16, and its compute roof.
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx512_bf16_entries() {
  return {
      .isa = Isa::avx512_bf16,
      .bf16_dot_panel_gemm = FFN_KERNEL(bf16_dot_panel_gemm_avx512bf16_6x64),
      .f32_to_bf16_rows = FFN_KERNEL(f32_to_bf16_rows_avx512bf16),
      .bf16_dot_roof = FFN_KERNEL(bf16_dot_roof_avx512bf16),
  };
}

}  // namespace

const KernelTable& table_avx512_bf16() {
  static const KernelTable table = inherit(table_avx512_vnni(), avx512_bf16_entries());
  return table;
}

}  // namespace ffn::kernels
