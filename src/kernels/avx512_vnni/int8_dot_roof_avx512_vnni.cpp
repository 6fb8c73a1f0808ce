// The integer compute roof on AVX-512 VNNI (kernels.hpp, int8_dot_roof): 24 chains of the
// 512-bit vpdpbusd, the avx512_vnni integer kernels' one instruction a step
// (int8_dot_roof.hpp).
// Compiled with the avx512_vnni level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <immintrin.h>

#include "kernels/avx512_vnni/avx512_vnni_kernels.hpp"
#include "kernels/int8_dot_roof.hpp"

namespace ffn::kernels {
namespace {

struct Avx512VnniIntDot {
  using Vec = __m512i;
  static Vec from_int(int32_t i) { return _mm512_set1_epi32(i); }
  static void step(Vec& acc) {
    const __m512i ones = _mm512_set1_epi8(1);
    asm volatile("vpdpbusd %1, %1, %0" : "+v"(acc) : "v"(ones));
  }
  static int64_t reduce(Vec v) { return _mm512_reduce_add_epi32(v); }
};

}  // namespace

float int8_dot_roof_avx512_vnni(int64_t iterations) {
  return int8_dot_roof<Avx512VnniIntDot, 24>(iterations);
}

}  // namespace ffn::kernels
