// Detection of the instruction-set levels (internal): one function a level of ffn/isa_list.hpp,
// cpu_has_<name>(), which says whether this CPU and OS support what the level adds to the one
// it extends (isa.cpp requires the whole chain). Each architecture defines its levels' in its
// own folder (x86_64/cpu_features_x86_64.cpp); cpu_has_scalar() is isa.cpp's.
#pragma once

#include "ffn/isa_list.hpp"

namespace ffn::kernels {

#define FFN_DECLARE_CPU_HAS(name, ...) bool cpu_has_##name();
FFN_ISA_LEVELS(FFN_DECLARE_CPU_HAS)
#undef FFN_DECLARE_CPU_HAS

}  // namespace ffn::kernels
