// The avx2_vnni table: the avx2 table with integer dot products by the 256-bit vpdpbusd,
// which compute the same bits as the AVX2 integer kernels they replace.
#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx2_vnni_entries() {
  KernelTable t{.isa = Isa::avx2_vnni,
                .int8_roof_chains = 12,
                .int8_roof_lanes = 8,
                .int8_dot_roof = FFN_KERNEL(int8_dot_roof_avx2_vnni),
                .rows_dot_q8_0 = FFN_KERNEL(rows_dot_q8_0_avx2_vnni)};
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_avx2_vnni_1x64);
  FFN_PANEL_KERNELS(t, qsub, panel_gemm_avx2_vnni_1x64_2x32);
  return t;
}

}  // namespace

const KernelTable& table_avx2_vnni() {
  static const KernelTable table = inherit(table_avx2(), avx2_vnni_entries());
  return table;
}

}  // namespace ffn::kernels
