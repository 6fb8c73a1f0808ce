// The amx_int8 level's kernels (contract in qblock_panels.hpp): q8_0 and q4_0 panels by AMX
// tile dot products, the same bits as the other integer kernels.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_amx_int8_16x64;

}  // namespace ffn::kernels
