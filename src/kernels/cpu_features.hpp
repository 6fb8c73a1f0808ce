// Detection of the instruction-set levels (internal): one function a level of ffn/isa_list.hpp,
// cpu_has_<name>(), which says whether this CPU and OS support what the level adds to the one
// it extends (isa.cpp requires the whole chain). Each architecture defines its levels' in its
// own folder (x86_64/cpu_features_x86_64.cpp); cpu_has_scalar() is isa.cpp's.
#pragma once

#include "ffn/isa.hpp"
#include "ffn/isa_list.hpp"

namespace ffn::kernels {

#define FFN_DECLARE_CPU_HAS(name, ...) bool cpu_has_##name();
FFN_ISA_LEVELS(FFN_DECLARE_CPU_HAS)
#undef FFN_DECLARE_CPU_HAS

// Whether the default choice (no FFN_ISA) may take level `isa` where this CPU supports it:
// false for a level whose kernels measured slower on this CPU than those of the level it
// extends, so that the default stops one level below. Defined beside the cpu_has_ functions.
bool cpu_default_takes(Isa isa);

#if defined(__x86_64__)
// Whether the CPU is Intel's (CPUID vendor "GenuineIntel"), read once; FFN_CPU_VENDOR=intel
// or amd overrides it. Where a choice was measured on Intel's cores and differs from AMD's,
// the kernels ask this (docs/performance.md, "An Intel CPU: Emerald Rapids").
bool cpu_is_intel();
#endif

}  // namespace ffn::kernels
