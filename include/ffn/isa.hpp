// Runtime choice of instruction set. One binary runs on any CPU of its architecture: kernels
// for wider ISAs are compiled per folder and the widest level the CPU supports is used —
// except avx512_bf16 on Intel's cores, where its vdpbf16ps measured slower than widening bf16
// in registers, so that avx512_vnni is used there — unless FFN_ISA or set_isa() asks for
// another. The levels are those of ffn/isa_list.hpp (isa_names() lists this build's): each
// builds on the one it extends — on x86-64, avx2_vnni and avx512
// both build on avx2 (Zen 4 and Skylake-X have AVX-512 without AVX-VNNI; Alder Lake has
// AVX-VNNI without AVX-512). Every ISA computes the same results within the tested error
// bounds, most bit for bit; the scalar kernels are the plain-C++ reference. On avx512_bf16,
// bf16 inference blocks round their activations to bf16 (as PyTorch's and ggml's bf16
// products do — README, accuracy); FFN_ISA=avx512_vnni keeps them in f32 on such a CPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ffn/isa_list.hpp"

namespace ffn {

enum class Isa {
#define FFN_ISA_ENUMERATOR(name, ...) name,
  FFN_ISA_LEVELS(FFN_ISA_ENUMERATOR)
#undef FFN_ISA_ENUMERATOR
};

std::string_view isa_name(Isa isa);
// The level an ISA builds on (scalar: itself).
Isa isa_extends(Isa isa);
// This build's levels, narrowest first, supported or not.
const std::vector<Isa>& all_isas();
// Their names joined by `separator`: "scalar, avx2, …" (parse_isa's message, the CLI's help).
std::string isa_names(std::string_view separator = ", ");
Isa parse_isa(std::string_view name);  // throws ffn::Error listing the names
std::vector<Isa> supported_isas();     // by this CPU and OS, narrowest first
bool isa_supported(Isa isa);
// The level kernels use without FFN_ISA or set_isa(): the widest supported, but on Intel's
// cores avx512_vnni where avx512_bf16 is supported too.
Isa default_isa();
// The ISA kernels use now: FFN_ISA if set (an unsupported or unknown value is an error
// raised on first use), else default_isa().
Isa active_isa();
void set_isa(Isa isa);  // throws ffn::Error if this CPU does not support it
// Whether bf16 inference blocks on the active ISA round their activations to bf16 for a bf16
// dot product (avx512_bf16) rather than widen the weights and stay in f32.
bool bf16_dot_products_active();

}  // namespace ffn
