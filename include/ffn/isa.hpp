// Runtime choice of instruction set. One binary runs on any x86-64: kernels for wider ISAs
// are compiled per file and the widest the CPU supports is used, unless FFN_ISA
// (scalar|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16) or set_isa() asks for another.
// Every ISA computes the same results within the tested error bounds; the scalar kernels
// are the plain-C++ reference. Each level is the one before it plus what it names, except
// that avx512 builds on avx2, not on avx2_vnni (Zen 4 and Skylake-X have AVX-512 without
// AVX-VNNI; Alder Lake has AVX-VNNI without AVX-512):
//   avx2:        AVX2 + FMA (+ F16C);
//   avx2_vnni:   + AVX-VNNI: integer dot products by the 256-bit vpdpbusd, the same bits
//                as AVX2's integer kernels;
//   avx512:      AVX-512F; the integer (q8_0 / q4_0) kernels stay AVX2's;
//   avx512_vnni: + AVX512_VNNI (with BW and VL): integer dot products by vpdpbusd, the same
//                bits as AVX2's integer kernels;
//   avx512_bf16: + AVX512_BF16 (every CPU with it has VNNI): packed bf16 blocks dot bf16
//                activations with vdpbf16ps (twice the products per instruction;
//                activations rounded to bf16, as PyTorch's and ggml's bf16 products do —
//                README, accuracy). FFN_ISA=avx512_vnni keeps them in f32 on such a CPU.
#pragma once

#include <string_view>
#include <vector>

namespace ffn {

enum class Isa { scalar, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16 };

std::string_view isa_name(Isa isa);
Isa parse_isa(std::string_view name);  // throws ffn::Error listing the names
std::vector<Isa> supported_isas();     // by this CPU and OS, narrowest first
bool isa_supported(Isa isa);
// isa_supported(Isa::avx512_vnni): AVX-512 VNNI with BW and VL.
bool avx512_vnni_supported();
// The ISA kernels use now: FFN_ISA if set (an unsupported or unknown value is an error
// raised on first use), else the widest supported.
Isa active_isa();
void set_isa(Isa isa);  // throws ffn::Error if this CPU does not support it
// Whether bf16 inference blocks on the active ISA round their activations to bf16 for
// AVX512_BF16's dot product (avx512_bf16) rather than widen the weights and stay in f32.
bool bf16_dot_products_active();

}  // namespace ffn
