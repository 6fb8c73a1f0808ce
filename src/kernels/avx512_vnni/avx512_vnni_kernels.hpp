// The avx512_vnni level's kernels (contracts in qblock_panels.hpp, qsub_panels.hpp): integer
// dot products by vpdpbusd on zmm, the same bits as avx2's integer kernels.
#pragma once

#include "kernels/panel_kernels.hpp"

namespace ffn::kernels {

extern const PanelGemmSet qblock_panel_gemm_avx512_vnni_2x64;
float int8_dot_roof_avx512_vnni(int64_t iterations);
extern const PanelGemmSet qsub_panel_gemm_avx512_vnni_2x64;

}  // namespace ffn::kernels
