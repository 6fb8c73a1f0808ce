// How each ISA folder registers its kernel table (scalar/register_scalar.cpp,
// avx2/register_avx2*.cpp, avx512/register_avx512*.cpp): with designated initialisers, each
// entry FFN_KERNEL(function), a wider ISA's table over the narrower one's (inherit). The
// register files take only the kernels' addresses, so they are compiled for baseline
// x86-64 like dispatch.cpp; no table is built before some kernel_table() call needs it.
#pragma once

#include "kernels/kernels.hpp"

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
#define FFN_KERNEL_INHERIT(type, field) \
  if (!own.field) own.field = narrower.field;
  FFN_KERNEL_OPS(FFN_KERNEL_INHERIT)
#undef FFN_KERNEL_INHERIT
  return own;
}

// Each ISA's table, built on first call (by its register_<isa>.cpp).
const KernelTable& table_scalar();
const KernelTable& table_avx2();
const KernelTable& table_avx2_vnni();
const KernelTable& table_avx512();
const KernelTable& table_avx512_vnni();
const KernelTable& table_avx512_bf16();

}  // namespace ffn::kernels
