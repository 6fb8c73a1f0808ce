// The avx512_vnni table: the avx512 table with integer dot products by vpdpbusd, which
// compute the same bits as the AVX2 integer kernels they replace.
#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx512_vnni_entries() {
  KernelTable t{.isa = Isa::avx512_vnni,
                .int8_roof_chains = 24,
                .int8_roof_lanes = 16,
                .int8_dot_roof = FFN_KERNEL(int8_dot_roof_avx512_vnni),
                .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_avx512_vnni)};
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_avx512_vnni_2x64);
  FFN_PANEL_KERNELS(t, qsub, panel_gemm_avx512_vnni_2x64);
  return t;
}

}  // namespace

const KernelTable& table_avx512_vnni() {
  static const KernelTable table = inherit(table_avx512(), avx512_vnni_entries());
  return table;
}

}  // namespace ffn::kernels
