// The dotprod level's kernels (contracts in qblock_panels.hpp, qsub_panels.hpp): the integer
// panel kernels by SDOT (Armv8.2 dotprod, 4 rows × 4 values a q register), a one-token tile
// that streams the panel and a 4-token tile; the rest of the table is the neon level's.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_dotprod_1x64_4x8;
extern const PanelGemmSet qsub_panel_gemm_dotprod_1x64_4x64;
float int8_dot_roof_dotprod(int64_t iterations);

extern const RowsDotQ8_0 rows_dot_q8_0_dotprod;

}  // namespace ffn::kernels
