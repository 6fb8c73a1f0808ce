// What each x86-64 level adds, read from cpuid once per call site (isa.cpp caches the
// answers), including the OS's saving of the wider registers as GCC's __builtin_cpu_supports
// checks it. isa.cpp requires the level each one extends, so each function asks only for
// what its own level adds.
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

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

// AMX: the CPU's AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25), the OS saving the
// tile state (XCR0 bits 17 and 18), and Linux's leave for this process to use it: since Linux
// 5.16 a process asks once (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), for every
// thread it has and will have; a tile instruction without it faults. Asked here, once, when
// the levels are first read.
bool cpu_has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned tile = 1u << 24, int8 = 1u << 25;
  if ((edx & (tile | int8)) != (tile | int8)) return false;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned xcr0 = 0, xcr0_high = 0;
  asm volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  const unsigned tile_state = (1u << 17) | (1u << 18);
  if ((xcr0 & tile_state) != tile_state) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;  // the OS's leave is asked only on Linux
#endif
}

bool cpu_is_intel() {
  static const bool intel = [] {
    // FFN_CPU_VENDOR=intel|amd takes either vendor's choices on any x86-64 CPU (checked by
    // active_isa(), which names a bad value), so that each is tested and measured anywhere.
    if (const char* vendor = std::getenv("FFN_CPU_VENDOR"); vendor && *vendor) return std::strcmp(vendor, "intel") == 0;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
    return ebx == signature_INTEL_ebx && ecx == signature_INTEL_ecx && edx == signature_INTEL_edx;
  }();
  return intel;
}

// avx512_bf16 adds one kernel, bf16 weights dotted by vdpbf16ps. On AMD's Zen 4 its FLOP
// rate is twice the f32 FMA's; on Intel's Emerald Rapids (Golden Cove cores, as Sapphire
// Rapids') 0.34–0.47 of it, and avx512_vnni's bf16 widened in registers ran bf16 blocks
// 1.2–1.45× faster at one token and 1.4–1.75× at four (docs/performance.md, "An Intel CPU:
// Emerald Rapids"). So on Intel's cores the default stays at avx512_vnni; FFN_ISA=avx512_bf16
// still takes it.
bool cpu_default_takes(Isa isa) { return !(isa == Isa::avx512_bf16 && cpu_is_intel()); }

}  // namespace ffn::kernels
