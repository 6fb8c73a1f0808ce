// The integer compute roof on AVX-VNNI (kernels.hpp, int8_dot_roof): 12 chains of the
// 256-bit vpdpbusd, the avx2_vnni integer kernels' one instruction a step (int8_dot_roof.hpp).
// Compiled with the avx2_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include "kernels/avx2_vnni/avx2_vnni_kernels.hpp"
#include "kernels/avx2/int32_lanes_avx2.hpp"
#include "kernels/int8_dot_roof.hpp"

namespace ffn::kernels {
namespace {

struct Avx2VnniIntDot : Avx2Int32Lanes {
  static void step(Vec& acc) {
    const __m256i ones = _mm256_set1_epi8(1);
    asm volatile("%{vex%} vpdpbusd %1, %1, %0" : "+x"(acc) : "x"(ones));
  }
};

}  // namespace

float int8_dot_roof_avx2_vnni(int64_t iterations) {
  return int8_dot_roof<Avx2VnniIntDot, 12>(iterations);
}

}  // namespace ffn::kernels
