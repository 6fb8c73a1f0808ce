// The avx2_vnni level's kernels (contracts in kernels.hpp, qblock_panels.hpp,
// qsub_panels.hpp): integer dot products by the 256-bit vpdpbusd, the same bits as avx2's.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_avx2_vnni_1x64;
extern const PanelGemmSet qsub_panel_gemm_avx2_vnni_1x64_2x32;
float int8_dot_roof_avx2_vnni(int64_t iterations);

extern const RowsDotQ8_0 rows_dot_q8_0_avx2_vnni;

}  // namespace ffn::kernels
