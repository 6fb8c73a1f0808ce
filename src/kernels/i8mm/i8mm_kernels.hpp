// The i8mm level's kernels (contracts in qblock_panels.hpp): the qblock panel kernels by
// USDOT and USMMLA (unsigned × signed, the arithmetic of x86's vpdpbusd): a one-token tile by
// USDOT, which takes q8_0's unsigned codes as they are (no EOR), and a 4-token tile by USMMLA,
// 32 products an instruction. The qsub types keep the dotprod kernels: their values are
// signed bytes already, so USDOT would run SDOT's instructions.
#pragma once

#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_i8mm_1x64_4x8;

}  // namespace ffn::kernels
