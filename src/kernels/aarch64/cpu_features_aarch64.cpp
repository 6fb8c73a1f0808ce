// What each AArch64 level adds, as the operating system reports it: on Linux the auxiliary
// vector's hardware capabilities (getauxval; the kernel sets a bit only for what it also
// saves and restores), on macOS sysctl's hw.optional.arm.FEAT_* (compiled only there, and
// untested: no Apple machine runs the test suite). isa.cpp requires the level each one
// extends, so each function asks only for what its own level adds.
#include "kernels/cpu_features.hpp"

#if defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#elif defined(__linux__)
#include <sys/auxv.h>
// The bits of <asm/hwcap.h>, spelled here for C libraries whose headers predate them.
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
#endif

namespace ffn::kernels {
namespace {

#if defined(__APPLE__)
bool sysctl_flag(const char* name) {
  int value = 0;
  size_t size = sizeof value;
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}
#endif

}  // namespace

// Advanced SIMD is part of every AArch64 CPU that runs a general-purpose OS; the OS still says so.
bool cpu_has_neon() {
#if defined(__APPLE__)
  return true;
#elif defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
  return false;
#endif
}

bool cpu_has_dotprod() {
#if defined(__APPLE__)
  return sysctl_flag("hw.optional.arm.FEAT_DotProd");
#elif defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}

bool cpu_has_i8mm() {
#if defined(__APPLE__)
  return sysctl_flag("hw.optional.arm.FEAT_I8MM");
#elif defined(__linux__)
  return (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#else
  return false;
#endif
}

bool cpu_has_bf16() {
#if defined(__APPLE__)
  return sysctl_flag("hw.optional.arm.FEAT_BF16");
#elif defined(__linux__)
  return (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
#else
  return false;
#endif
}

// Every level the CPU has: BFDOT, the one level-specific choice on Arm, has not been
// measured against widening on Arm hardware.
bool cpu_default_takes(Isa) { return true; }

}  // namespace ffn::kernels
