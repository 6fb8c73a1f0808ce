// The kernel table of each ISA (registered by its folder, kernels/register.hpp), the
// active one, and the listing of a table's entries that the tests iterate.
#include <string>

#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/register.hpp"

namespace ffn {
namespace kernels {
namespace {

const KernelTable& table_of(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      break;
    case Isa::avx2:
      return table_avx2();
    case Isa::avx2_vnni:
      return table_avx2_vnni();
    case Isa::avx512:
      return table_avx512();
    case Isa::avx512_vnni:
      return table_avx512_vnni();
    case Isa::avx512_bf16:
      return table_avx512_bf16();
  }
  return table_scalar();
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
#define FFN_KERNEL_OP_NAME(type, field) \
  case Op::field:                       \
    return #field;
    FFN_KERNEL_OPS(FFN_KERNEL_OP_NAME)
#undef FFN_KERNEL_OP_NAME
  }
  return "?";
}

const KernelTable& kernel_table(Isa isa) {
  if (!isa_supported(isa)) throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  return table_of(isa);
}

const KernelTable& active_kernels() { return kernel_table(active_isa()); }

std::vector<RegisteredKernel> registered_kernels(Isa isa) {
  const KernelTable& k = table_of(isa);
  std::vector<RegisteredKernel> out;
#define FFN_KERNEL_LIST_ENTRY(type, field) \
  if (k.field) out.push_back({Op::field, k.field.name, isa});
  FFN_KERNEL_OPS(FFN_KERNEL_LIST_ENTRY)
#undef FFN_KERNEL_LIST_ENTRY
  return out;
}

}  // namespace kernels

bool bf16_dot_products_active() { return static_cast<bool>(kernels::active_kernels().bf16_dot_panel_gemm); }

}  // namespace ffn
