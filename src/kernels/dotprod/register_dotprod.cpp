// The dotprod table: for now the neon table's kernels (placeholder until its own kernels land).
#include "kernels/register.hpp"

namespace ffn::kernels {

const KernelTable& table_dotprod() {
  static const KernelTable table = inherit(table_neon(), KernelTable{.isa = Isa::dotprod});
  return table;
}

}  // namespace ffn::kernels
