// Runtime choice of instruction set. One binary runs on any x86-64: kernels for wider ISAs
// are compiled per file and the widest the CPU supports is used, unless FFN_ISA
// (scalar|avx2|avx512|avx512_bf16) or set_isa() asks for another. Every ISA computes the
// same results within the tested error bounds; the scalar kernels are the plain-C++
// reference.
//   avx512_bf16: the avx512 kernels, except that packed bf16 blocks dot bf16 activations
//   with AVX512_BF16's vdpbf16ps (twice the products per instruction; activations rounded
//   to bf16, as PyTorch's and ggml's bf16 products do — README, accuracy). FFN_ISA=avx512
//   keeps them in f32 on such a CPU.
#pragma once

#include <string_view>
#include <vector>

namespace ffn {

enum class Isa { scalar, avx2, avx512, avx512_bf16 };

std::string_view isa_name(Isa isa);
Isa parse_isa(std::string_view name);  // throws ffn::Error listing the names
std::vector<Isa> supported_isas();     // by this CPU and OS, narrowest first
bool isa_supported(Isa isa);
// AVX-512 VNNI (with BW and VL): the avx512 kernels' integer dot products use it where
// present; without it they run the AVX2 integer kernels, which compute the same bits.
bool avx512_vnni_supported();
// The ISA kernels use now: FFN_ISA if set (an unsupported or unknown value is an error
// raised on first use), else the widest supported.
Isa active_isa();
void set_isa(Isa isa);  // throws ffn::Error if this CPU does not support it
// Whether bf16 inference blocks on the active ISA round their activations to bf16 for
// AVX512_BF16's dot product (avx512_bf16) rather than widen the weights and stay in f32.
bool bf16_dot_products_active();

}  // namespace ffn
