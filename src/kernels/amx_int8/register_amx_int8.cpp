// The amx_int8 table: the avx512_vnni table with the qblock panels (q8_0, q4_0) by AMX tiles
// at 16 tokens and from 32 (other token counts still avx512_vnni's vpdpbusd); the same bits.
#include "kernels/amx_int8/amx_int8_kernels.hpp"
#include "kernels/register.hpp"

namespace ffn::kernels {
namespace {

KernelTable amx_int8_entries() {
  KernelTable t{.isa = Isa::amx_int8};
  FFN_PANEL_KERNELS(t, qblock, panel_gemm_amx_int8_16x64);
  return t;
}

}  // namespace

const KernelTable& table_amx_int8() {
  static const KernelTable table = inherit(table_avx512_vnni(), amx_int8_entries());
  return table;
}

}  // namespace ffn::kernels
