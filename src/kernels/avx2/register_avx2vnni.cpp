// The AVX-VNNI table: the avx2 table with integer dot products by the 256-bit vpdpbusd,
// which compute the same bits as the AVX2 integer kernels they replace.
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx2_vnni_entries() {
  return {
      .isa = Isa::avx2_vnni,
      .q_panel_gemm = FFN_KERNEL(q_panel_gemm_avx2vnni_1x64),
      .kq_panel_gemm = FFN_KERNEL(kq_panel_gemm_avx2vnni_1x64),
  };
}

}  // namespace

const KernelTable& table_avx2_vnni() {
  static const KernelTable table = inherit(table_avx2(), avx2_vnni_entries());
  return table;
}

}  // namespace ffn::kernels
