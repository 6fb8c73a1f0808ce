// The i8mm level's kernels (contracts in qblock_panels.hpp): USDOT (unsigned × signed, the
// arithmetic of x86's vpdpbusd) where it saves an instruction over the dotprod level's SDOT —
// q8_0, whose unsigned codes it takes as they are. Its set holds q8_0 alone: q4_0's nibbles
// and every qsub value are signed bytes already, so those types keep the dotprod kernels.
#pragma once

#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_i8mm_1x64_4x8;

}  // namespace ffn::kernels
