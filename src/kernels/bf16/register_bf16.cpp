// The bf16 table: for now the i8mm table's kernels (placeholder until its own kernels land).
#include "kernels/register.hpp"

namespace ffn::kernels {

const KernelTable& table_bf16() {
  static const KernelTable table = inherit(table_i8mm(), KernelTable{.isa = Isa::bf16});
  return table;
}

}  // namespace ffn::kernels
