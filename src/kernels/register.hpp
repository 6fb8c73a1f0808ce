// How each level's folder registers its kernel table (register_<level>.cpp): with designated
// initialisers, each op FFN_KERNEL(function), then its panel kernels (panel_kernels.hpp), a
// wider level's table over the one it extends (inherit). The register files take only the
// kernels' addresses, so they are compiled for the baseline of the architecture like
// dispatch.cpp; no table is built before some kernel_table() call needs it.
#pragma once

#include "ffn/isa_list.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

// The table entry of a kernel function (or constant function pointer), named by its own
// identifier: FFN_KERNEL(f32_gemm_nt_avx2_3x3) is {"f32_gemm_nt_avx2_3x3",
// f32_gemm_nt_avx2_3x3}. A kernel of the wrong signature for its field does not compile.
#define FFN_KERNEL(fn) \
  ::ffn::kernels::Named<decltype(+(fn))> { #fn, fn }

namespace ffn::kernels {

// A wider ISA's table: `own` — its isa and what it adds or replaces — over `narrower`,
// whose entries (and vector shape, where own leaves it 0) fill every one own leaves empty.
// So a level says what it inherits by omitting it: AVX-512 without VNNI keeps AVX2's
// integer kernels.
inline KernelTable inherit(const KernelTable& narrower, KernelTable own) {
  if (own.f32_lanes == 0) own.f32_lanes = narrower.f32_lanes;
  if (own.f32_roof_chains == 0) own.f32_roof_chains = narrower.f32_roof_chains;
  if (!own.int8_dot_roof) {
    own.int8_roof_chains = narrower.int8_roof_chains;
    own.int8_roof_lanes = narrower.int8_roof_lanes;
  }
#define FFN_KERNEL_INHERIT(type, field) \
  if (!own.field) own.field = narrower.field;
  FFN_KERNEL_OPS(FFN_KERNEL_INHERIT)
#undef FFN_KERNEL_INHERIT
  for (size_t t = 0; t < own.panel_gemm.size(); ++t)
    if (!own.panel_gemm[t]) own.panel_gemm[t] = narrower.panel_gemm[t];
  return own;
}

// Each level's table, built on first call (by its register_<level>.cpp).
#define FFN_DECLARE_TABLE(name, ...) const KernelTable& table_##name();
FFN_ISA_LEVELS(FFN_DECLARE_TABLE)
#undef FFN_DECLARE_TABLE

}  // namespace ffn::kernels
