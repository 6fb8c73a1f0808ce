// The dotprod table: the neon table with integer panel kernels by SDOT, which compute the
// same bits as the neon and scalar integer kernels (exact integer sums, then the
// contract's f32 chain).
#include "kernels/dotprod/dotprod_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable dotprod_entries() {
  KernelTable t{.isa = Isa::dotprod,
                .int8_roof_chains = 24,
                .int8_roof_lanes = 4,
                .int8_dot_roof = FFN_KERNEL(int8_dot_roof_dotprod),
                .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_dotprod)};
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_dotprod_1x64_4x8);
  FFN_PANEL_KERNELS(t, qsub, panel_gemm_dotprod_1x64_4x64);
  return t;
}

}  // namespace

const KernelTable& table_dotprod() {
  static const KernelTable table = inherit(table_neon(), dotprod_entries());
  return table;
}

}  // namespace ffn::kernels
