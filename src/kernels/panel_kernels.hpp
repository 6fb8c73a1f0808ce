// How the panel kernels are written once per family and registered once per weight type: a
// kernel file defines its family's kernel as a template over the type and exports the set of
// its instances for every type of the family (panel_gemm_set), a constant, so that a file
// compiled for a wider ISA runs no code at start-up; its level's register file names each
// instance after its type (add_panel_kernels) — so a type added to the list is multiplied by
// every ISA's kernel of its family with no edit here or in any kernel file.
#pragma once

#include <array>
#include <string_view>

#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"

namespace ffn::kernels {

// A family's kernels of one ISA, indexed by WeightType (null outside the family).
using PanelGemmSet = std::array<PanelGemm, kWeightTypeCount>;

// make.template operator()<W>() — the kernel of type W — for every type W of `family`.
template <PanelFamily family, class Make>
constexpr PanelGemmSet panel_gemm_set(Make make) {
  PanelGemmSet set{};
  for_each_type_of<family>([&]<WeightType W>() { set[static_cast<size_t>(W)] = make.template operator()<W>(); });
  return set;
}

// How the kernels of an integer family multiply, for people (`ffn types`).
std::string_view q_arithmetic(WeightType t);

// The activation format the integer families' kernels take for type t: q8_0 for the qblock
// types and the 32-value qsub types, q8_K for the qsub types of 256-value blocks.
constexpr WeightType q_activations(WeightType t) {
  return q_format(t).block == 256 ? WeightType::q8_K : WeightType::q8_0;
}

// Registers `set` in `table`, each type's kernel named <type>_<suffix> (the suffix naming the
// op, the ISA and the tile: "panel_gemm_avx512_vnni_2x64"), taking the integer families'
// activations (q_activations) and arithmetic (q_arithmetic).
void add_panel_kernels(KernelTable& table, const PanelGemmSet& set, std::string_view suffix);
// One type's kernel with its name, activations and arithmetic given.
void add_panel_kernel(KernelTable& table, WeightType t, PanelGemm fn, std::string_view name, WeightType activations,
                      std::string_view arithmetic);

// The f32 panel kernel as a panel kernel of f32 weights (the table's f32_panel_gemm reads its
// activations as plain rows; the adapter is a call and no more).
template <F32PanelGemm Kernel>
void f32_panel_kernel(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc) {
  Kernel(T, K, A.f32(), A.f32_stride(), reinterpret_cast<const float*>(P), C, ldc);
}

}  // namespace ffn::kernels

// The set of a family's template kernel, named family_suffix in the kernel file:
// FFN_PANEL_KERNEL_SET(qsub, panel_gemm_avx2_1x64, panel) defines qsub_panel_gemm_avx2_1x64
// from panel<W>.
#define FFN_PANEL_KERNEL_SET(family, suffix, kernel)                       \
  const ::ffn::kernels::PanelGemmSet family##_##suffix =                   \
      ::ffn::kernels::panel_gemm_set<::ffn::kernels::PanelFamily::family>( \
          []<::ffn::WeightType W>() -> ::ffn::kernels::PanelGemm { return &kernel<W>; })
// Registering a set in a register file: FFN_PANEL_KERNELS(table, qsub, panel_gemm_avx2_1x64).
#define FFN_PANEL_KERNELS(table, family, suffix) ::ffn::kernels::add_panel_kernels(table, family##_##suffix, #suffix)
