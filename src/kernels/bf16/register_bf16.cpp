// The bf16 table: the i8mm table plus the bf16 dot product (BFDOT), with which bf16 weights
// dot activations rounded to bf16 (BFCVTN), and its compute roof — as the avx512_bf16 table
// is to avx512_vnni's.
#include "kernels/bf16/bf16_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable bf16_entries() {
  KernelTable t{
      .isa = Isa::bf16,
      .f32_to_bf16_rows = FFN_KERNEL(f32_to_bf16_rows_bf16),
      .bf16_dot_roof = FFN_KERNEL(bf16_dot_roof_bf16),
  };
  add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_bf16_1x64_8x8, "bf16_panel_gemm_bf16_1x64_8x8",
                   WeightType::bf16, "BFDOT");
  return t;
}

}  // namespace

const KernelTable& table_bf16() {
  static const KernelTable table = inherit(table_i8mm(), bf16_entries());
  return table;
}

}  // namespace ffn::kernels
