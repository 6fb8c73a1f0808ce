// The AVX-512 VNNI table: the avx512 table with integer dot products by vpdpbusd, which
// compute the same bits as the AVX2 integer kernels they replace.
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable avx512_vnni_entries() {
  return {
      .isa = Isa::avx512_vnni,
      .q_panel_gemm = FFN_KERNEL(q_panel_gemm_avx512vnni_2x64),
      .kq_panel_gemm = FFN_KERNEL(kq_panel_gemm_avx512vnni_2x64),
  };
}

}  // namespace

const KernelTable& table_avx512_vnni() {
  static const KernelTable table = inherit(table_avx512(), avx512_vnni_entries());
  return table;
}

}  // namespace ffn::kernels
