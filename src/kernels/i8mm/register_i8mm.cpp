// The i8mm table: the dotprod table with q8_0's panel kernel by USDOT (its unsigned codes as
// they are, no EOR, for a lone token), the same bits as the SDOT kernel it replaces; q4_0 and
// the qsub types keep the dotprod kernels (i8mm_kernels.hpp says why).
#include "kernels/i8mm/i8mm_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable i8mm_entries() {
  KernelTable t{.isa = Isa::i8mm};
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_i8mm_1x64_4x8);
  return t;
}

}  // namespace

const KernelTable& table_i8mm() {
  static const KernelTable table = inherit(table_dotprod(), i8mm_entries());
  return table;
}

}  // namespace ffn::kernels
