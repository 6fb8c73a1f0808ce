// The i8mm table: the dotprod table with the qblock panel kernels by USDOT (one token) and
// USMMLA (4 tokens), the same bits as the SDOT kernels they replace; the qsub types keep the
// dotprod kernels (i8mm_kernels.hpp says why).
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
