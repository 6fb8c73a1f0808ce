// The avx512_vnni level's kernels (contracts in qblock_panels.hpp, qsub_panels.hpp): integer
// dot products by vpdpbusd on zmm, the same bits as avx2's integer kernels.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_avx512_vnni_2x64;
float int8_dot_roof_avx512_vnni(int64_t iterations);
extern const PanelGemmSet qsub_panel_gemm_avx512_vnni_2x64;

extern const RowsDotQ8_0 rows_dot_q8_0_avx512_vnni;

}  // namespace ffn::kernels
