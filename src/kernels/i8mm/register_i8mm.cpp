// The i8mm table: for now the dotprod table's kernels (placeholder until its own kernels land).
#include "kernels/register.hpp"

namespace ffn::kernels {

const KernelTable& table_i8mm() {
  static const KernelTable table = inherit(table_dotprod(), KernelTable{.isa = Isa::i8mm});
  return table;
}

}  // namespace ffn::kernels
