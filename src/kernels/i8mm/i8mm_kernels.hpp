// The i8mm level's kernels (contracts in qblock_panels.hpp): USDOT (unsigned × signed, the
// arithmetic of x86's vpdpbusd) where it saves instructions over the dotprod level's SDOT —
// q8_0's one-token tile, which takes the unsigned codes as they are instead of flipping each
// panel vector back to signed. Its set holds q8_0 alone: q4_0's nibbles and every qsub value
// are signed bytes already, so USDOT would run SDOT's instructions and those types keep the
// dotprod kernels. (USMMLA, 2 rows × 2 tokens × 8 values an instruction, does not pay here:
// its operands need a ZIP a product pair, and the 32-value blocks' scale and sum work, not
// the products, is most of a multi-token tile's instructions.)
#pragma once

#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_i8mm_1x64_4x8;

}  // namespace ffn::kernels
