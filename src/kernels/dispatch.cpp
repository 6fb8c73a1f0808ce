// The kernel table of each level (registered by its folder, kernels/register.hpp), the
// active one, the listing of a table's entries that the tests iterate, and the registration
// of panel kernels by weight type (panel_kernels.hpp).
#include <string>

#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/register.hpp"

namespace ffn {
namespace kernels {
namespace {

const KernelTable& table_of(Isa isa) {
  switch (isa) {
#define FFN_TABLE_CASE(name, ...) \
  case Isa::name:                 \
    return table_##name();
    FFN_ISA_LEVELS(FFN_TABLE_CASE)
#undef FFN_TABLE_CASE
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
    case Op::panel_gemm:
      return "panel_gemm";
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
  for (int t = 0; t < kWeightTypeCount; ++t)
    if (k.panel_gemm[size_t(t)]) out.push_back({Op::panel_gemm, k.panel_gemm[size_t(t)].name, isa, WeightType(t)});
  return out;
}

void add_panel_kernel(KernelTable& table, WeightType t, PanelGemm fn, std::string_view name, WeightType activations,
                      std::string_view arithmetic) {
  table.panel_gemm[static_cast<size_t>(t)] = {std::string(name), arithmetic, activations, fn};
}

void add_panel_kernels(KernelTable& table, const PanelGemmSet& set, std::string_view suffix) {
  for (int i = 0; i < kWeightTypeCount; ++i) {
    const auto t = static_cast<WeightType>(i);
    if (set[size_t(i)])
      add_panel_kernel(table, t, set[size_t(i)], std::string(type_name(t)) + "_" + std::string(suffix),
                       q_activations(t), q_arithmetic(t));
  }
}

std::string_view q_arithmetic(WeightType t) {
  const QFormat f = q_format(t);
  if (panel_family(t) == PanelFamily::qblock) return "exact integer dot products per block";
  const bool super = f.block == 256;
  if (f.has_codebook())
    return super ? "nibbles through a 16-entry codebook, exact integer sums per super-block"
                 : "nibbles through a 16-entry codebook, exact integer sums per block";
  return super ? "exact integer sums per super-block" : "exact integer sums per block (a scale and a min each)";
}

}  // namespace kernels

bool bf16_dot_products_active() {
  return kernels::active_kernels().panel(WeightType::bf16).activations == WeightType::bf16;
}

}  // namespace ffn
