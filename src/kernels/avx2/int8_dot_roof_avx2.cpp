// The integer compute roof on AVX2 (kernels.hpp, int8_dot_roof): 12 chains of the AVX2
// integer kernels' step — vpmaddubsw (unsigned × signed bytes into int16 pairs), vpmaddwd
// (the pairs into int32 lanes), vpaddd — on ymm registers (int8_dot_roof.hpp).
// Compiled with the avx2 level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.hpp"
#include "kernels/avx2/int32_lanes_avx2.hpp"
#include "kernels/int8_dot_roof.hpp"

namespace ffn::kernels {
namespace {

struct Avx2IntDot : Avx2Int32Lanes {
  static void step(Vec& acc) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i t;
    asm volatile(
        "vpmaddubsw %2, %2, %1\n\t"
        "vpmaddwd %3, %1, %1\n\t"
        "vpaddd %1, %0, %0"
        : "+x"(acc), "=&x"(t)
        : "x"(ones8), "x"(ones16));
  }
};

}  // namespace

float int8_dot_roof_avx2(int64_t iterations) { return int8_dot_roof<Avx2IntDot, 12>(iterations); }

}  // namespace ffn::kernels
