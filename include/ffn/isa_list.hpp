// The one list of instruction-set levels, per processor architecture: a build has the scalar
// level and its own architecture's. One line a level, narrowest first:
//
// X(name, extends, flags, summary)
//   name     the level (Isa::name, FFN_ISA=name); its kernels live in src/kernels/name/
//   extends  the level it builds on: a CPU has this level only if it has that one too, and the
//            level's kernel table starts from that level's (scalar extends itself)
//   flags    the compiler options of the level's own files (src/kernels/name/*.cpp but its
//            register_name.cpp, which stays baseline); a level's files are also compiled with
//            the flags of the levels it extends
//   summary  what the level adds, for people
//
// From these lines come the Isa enum and its names (ffn/isa.hpp), parse_isa and its message,
// the tables dispatch picks from, the detection (cpu_has_<name>() in src/kernels/<arch>/, one
// function a level) and, read by src/kernels/isa_levels.cmake, which folders the build compiles
// with which flags. Adding a level is its line, its folder and its detection function.
#pragma once

// clang-format off
#define FFN_ISA_LEVELS_SCALAR(X)                                                                      \
  X(scalar,      scalar,      "",                                                                     \
    "plain C++: the reference of every kernel")

#define FFN_ISA_LEVELS_X86_64(X)                                                                      \
  X(avx2,        scalar,      "-mavx2 -mfma -mf16c",                                                  \
    "AVX2 + FMA + F16C")                                                                              \
  X(avx2_vnni,   avx2,        "-mavxvnni",                                                            \
    "+ AVX-VNNI: integer dot products by the 256-bit vpdpbusd, the same bits as avx2's")              \
  X(avx512,      avx2,        "-mavx512f -Wno-uninitialized -Wno-maybe-uninitialized",                \
    "AVX-512F: f32, 16-bit and activation kernels on zmm (integer kernels stay avx2's)")              \
  X(avx512_vnni, avx512,      "-mavx512bw -mavx512vl -mavx512vnni",                                   \
    "+ AVX512_VNNI (with BW and VL): integer dot products by vpdpbusd, the same bits as avx2's")      \
  X(avx512_bf16, avx512_vnni, "-mavx512bf16",                                                         \
    "+ AVX512_BF16: bf16 weights dotted with activations rounded to bf16 by vdpbf16ps")               \
  X(amx_int8,    avx512_vnni, "-mamx-tile -mamx-int8",                                                \
    "+ AMX-TILE and AMX-INT8: q8_0 and q4_0 products of several tokens by tile dot products, same bits")

// Each AArch64 level's flags name the whole architecture it needs (the last -march wins, and
// a level's files get the flags of the levels below it first). FEAT_BF16 and FEAT_I8MM came
// together (both mandatory from Armv8.6); every CPU with BFDOT has USDOT.
#define FFN_ISA_LEVELS_AARCH64(X)                                                                     \
  X(neon,        scalar,      "",                                                                     \
    "Advanced SIMD (every AArch64 CPU): f32 FMA on 4-lane registers, f16 and bf16 widened in them")   \
  X(dotprod,     neon,        "-march=armv8.2-a+dotprod",                                             \
    "+ SDOT (FEAT_DotProd): integer dot products of 4 bytes, the same bits as the scalar reference")  \
  X(i8mm,        dotprod,     "-march=armv8.2-a+dotprod+i8mm",                                        \
    "+ USDOT and SMMLA (FEAT_I8MM): unsigned × signed byte dot products, the same bits")              \
  X(bf16,        i8mm,        "-march=armv8.2-a+dotprod+i8mm+bf16",                                   \
    "+ BFDOT (FEAT_BF16): bf16 weights dotted with activations rounded to bf16")
// clang-format on

#if defined(__x86_64__) || defined(_M_X64)
#define FFN_ISA_LEVELS(X) FFN_ISA_LEVELS_SCALAR(X) FFN_ISA_LEVELS_X86_64(X)
#elif defined(__aarch64__) || defined(_M_ARM64)
#define FFN_ISA_LEVELS(X) FFN_ISA_LEVELS_SCALAR(X) FFN_ISA_LEVELS_AARCH64(X)
#else
#define FFN_ISA_LEVELS(X) FFN_ISA_LEVELS_SCALAR(X)
#endif
