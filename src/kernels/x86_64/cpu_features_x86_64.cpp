// What each x86-64 level adds, read from cpuid once per call site (isa.cpp caches the
// answers), including the OS's saving of the wider registers as GCC's __builtin_cpu_supports
// checks it. isa.cpp requires the level each one extends, so each function asks only for
// what its own level adds.
#include <cpuid.h>

#include "kernels/cpu_features.hpp"

namespace ffn::kernels {
namespace {

// CPUID leaf 7 sub-leaf 1, EAX: AVX-VNNI (bit 4) and AVX512_BF16 (bit 5), read directly (as
// GCC 12's __builtin_cpu_supports has no name for them).
bool leaf7_1_eax_bit(unsigned bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << bit)) != 0;
}

}  // namespace

// F16C (vcvtph2ps, the f16 weights' widening; CPUID leaf 1, ECX bit 29, read directly: clang's
// __builtin_cpu_supports has no "f16c") came before AVX2 on every x86 CPU; its registers are
// AVX's, whose OS support the AVX2 check covers.
bool cpu_has_avx2() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

// The VEX-coded vpdpbusd; its registers are AVX's.
bool cpu_has_avx2_vnni() { return leaf7_1_eax_bit(4); }

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

// The VNNI files also use AVX-512BW/VL (byte shuffles, masked stores).
bool cpu_has_avx512_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// Every CPU with AVX512_BF16 has VNNI; its file uses BW/VL too (masked 16-bit stores).
bool cpu_has_avx512_bf16() { return leaf7_1_eax_bit(5); }

}  // namespace ffn::kernels
