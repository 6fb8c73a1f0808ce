// The integer compute roof on Arm's dotprod (kernels.hpp, int8_dot_roof): 24 chains of
// SDOT on q registers, the dotprod integer kernels' instruction, 4 byte products a 32-bit
// lane (int8_dot_roof.hpp). The i8mm and bf16 levels keep it: their integer kernels are
// dotprod's, but for i8mm's q8_0 one-token tile, whose USDOT does SDOT's 4 products a lane
// (i8mm_kernels.hpp: no kernel uses (U)SMMLA's 8, so no row can read above this roof).
// Compiled with the dotprod level's flags (ffn/isa_list.hpp); called only when the CPU has the level.
#include <arm_neon.h>

#include "kernels/dotprod/dotprod_kernels.hpp"
#include "kernels/int8_dot_roof.hpp"

namespace ffn::kernels {
namespace {

struct SdotIntDot {
  using Vec = int32x4_t;
  static Vec from_int(int32_t i) { return vdupq_n_s32(i); }
  static void step(Vec& acc) {
    const int8x16_t ones = vdupq_n_s8(1);
    asm volatile("sdot %0.4s, %1.16b, %1.16b" : "+w"(acc) : "w"(ones));
  }
  static int64_t reduce(Vec v) { return int64_t(vaddvq_s32(v)); }
};

}  // namespace

float int8_dot_roof_dotprod(int64_t iterations) { return int8_dot_roof<SdotIntDot, 24>(iterations); }

}  // namespace ffn::kernels
