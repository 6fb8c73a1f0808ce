// The avx512_bf16 table: the avx512_vnni table plus the bf16 dot product, with which bf16
// weights dot activations rounded to bf16, and its compute roof.
#include "kernels/avx512_bf16/avx512_bf16_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx512_bf16_entries() {
  KernelTable t{
      .isa = Isa::avx512_bf16,
      .f32_to_bf16_rows = FFN_KERNEL(f32_to_bf16_rows_avx512_bf16),
      .bf16_dot_roof = FFN_KERNEL(bf16_dot_roof_avx512_bf16),
  };
  add_panel_kernel(t, WeightType::bf16, bf16_panel_gemm_avx512_bf16_6x64, "bf16_panel_gemm_avx512_bf16_6x64",
                   WeightType::bf16, "vdpbf16ps");
  return t;
}

}  // namespace

const KernelTable& table_avx512_bf16() {
  static const KernelTable table = inherit(table_avx512_vnni(), avx512_bf16_entries());
  return table;
}

}  // namespace ffn::kernels
