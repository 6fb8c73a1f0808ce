// The one list of ffn's types, after ggml's type traits: every weight type a block's matrix can
// be stored and run in, and the activation formats the forward's kernels take — which, as
// ggml's vec_dot_type, are types of the same list (f32, bf16, q8_0, and q8_K, which serves only
// as activations). One line a type. From these lines come the WeightType enum
// (ffn/weight_type.hpp), the table indexed by it (src/core/weight_type_table.hpp: geometry,
// codec, scale checks, panel layout), the panel kernels each ISA registers
// (src/kernels/panel_kernels.hpp), the codecs' declarations (src/core/codecs.hpp) and the
// tests' lists of types. A type that fits an existing panel family is its line here plus its
// codec (docs/architecture.md, checklist "a weight type").
//
// X(name, gguf, block, bytes, panels, scales, format, summary)
//   name     ggml's name of the type (WeightType::name; parse_weight_type ignores case)
//   gguf     ggml's type number (enum ggml_type), as GGUF tensor infos hold it
//   block    values a block along a row;  bytes: bytes a block (ggml's layout, byte for byte)
//   panels   how the forward lays the type's rows out and multiplies them
//            (src/kernels/panel_family.hpp):
//              f32, f16, bf16  the stored values, 64 rows side by side, f32 arithmetic
//                              (bf16: also dotted as bf16 where the ISA has a bf16 dot product);
//              qblock          32-value blocks, one binary16 scale, the codes as unsigned bytes
//                              or nibbles: exact integer dot products against q8_0 activations;
//              qsub            blocks of sub-blocks with integer scales (and mins), any codes of
//                              at most 8 bits: exact integer dot products against q8_K
//                              activations (blocks of 256) or q8_0 (blocks of 32);
//              none            an activation format only, never a weight
//   scales   byte offsets in a block of its binary16 scale d and min dmin (−1: none), checked
//            to be finite when a file's tensor is first read (an e8m0 byte where the format
//            says so)
//   format   the integer form of the values in the qblock and qsub panels: the fields of
//            kernels::QFormat (src/kernels/q_format.hpp) that differ from its defaults; () for
//            the other families
//   summary  the layout in one line (`ffn types`)
//
// The order is `ffn types`'s: the element types, ggml's 32-value blocks, its K-quants, its
// older 32-blocks, the codebook types, the ternary types, then the activation-only formats.
#pragma once

// clang-format off
#define FFN_WEIGHT_TYPES(X)                                                                                          \
  X(f32,    0,    1,   4, f32,    (-1, -1),  (),                                                                     \
    "IEEE binary32")                                                                                                 \
  X(bf16,   30,   1,   2, bf16,   (-1, -1),  (),                                                                     \
    "bfloat16: the upper half of an f32, rounded to nearest even")                                                  \
  X(f16,    1,    1,   2, f16,    (-1, -1),  (),                                                                     \
    "IEEE binary16, rounded to nearest even")                                                                        \
  X(q8_0,   8,   32,  34, qblock, (0, -1),   (.offset = 128),                                                        \
    "ggml Q8_0: 32 int8 weights and a binary16 scale")                                                              \
  X(q4_0,   2,   32,  18, qblock, (0, -1),   (.offset = 8, .nibbles = true),                                         \
    "ggml Q4_0: 32 4-bit weights (offset 8) and a binary16 scale")                                                  \
  X(q6_K,   14, 256, 210, qsub,   (208, -1), (.sub = 16, .offset = 32, .nibbles = true, .high_bits = 2),             \
    "ggml Q6_K: 16 sub-blocks of 16 6-bit weights (offset 32), int8 scales, a binary16 scale")                      \
  X(q5_K,   13, 256, 176, qsub,   (0, 2),    (.nibbles = true, .has_min = true, .high_bits = 1),                     \
    "ggml Q5_K: 8 sub-blocks of 32 5-bit weights, 6-bit scales and mins, binary16 d and dmin")                      \
  X(q4_K,   12, 256, 144, qsub,   (0, 2),    (.nibbles = true, .has_min = true),                                     \
    "ggml Q4_K: 8 sub-blocks of 32 4-bit weights, 6-bit scales and mins, binary16 d and dmin")                      \
  X(q3_K,   11, 256, 110, qsub,   (108, -1), (.sub = 16, .offset = 4, .nibbles = true),                              \
    "ggml Q3_K: 16 sub-blocks of 16 3-bit weights (offset 4), 6-bit scales, a binary16 scale")                      \
  X(q2_K,   10, 256,  84, qsub,   (80, 82),  (.sub = 16, .nibbles = true, .crumbs = true, .has_min = true),          \
    "ggml Q2_K: 16 sub-blocks of 16 2-bit weights, 4-bit scales and mins, binary16 d and dmin")                     \
  X(q5_1,   7,   32,  24, qsub,   (0, 2),    (.nibbles = true, .has_min = true, .high_bits = 1),                     \
    "ggml Q5_1: 32 5-bit weights, a binary16 scale and an additive binary16 min")                                   \
  X(q5_0,   6,   32,  22, qsub,   (0, -1),   (.offset = 16, .nibbles = true, .high_bits = 1),                        \
    "ggml Q5_0: 32 5-bit weights (offset 16) and a binary16 scale")                                                 \
  X(q4_1,   3,   32,  20, qsub,   (0, 2),    (.nibbles = true, .has_min = true),                                     \
    "ggml Q4_1: 32 4-bit weights, a binary16 scale and an additive binary16 min")                                   \
  X(iq4_nl, 20,  32,  18, qsub,   (0, -1),   (.nibbles = true, .codebook = Codebook::iq4),                           \
    "ggml IQ4_NL: 32 4-bit indices into a non-linear int8 codebook and a binary16 scale")                           \
  X(iq4_xs, 23, 256, 136, qsub,   (0, -1),   (.nibbles = true, .codebook = Codebook::iq4),                           \
    "ggml IQ4_XS: 8 sub-blocks of 32 IQ4_NL codebook indices, 6-bit scales (offset 32), a binary16 scale")          \
  X(mxfp4,  39,  32,  17, qsub,   (0, -1),   (.nibbles = true, .codebook = Codebook::mxfp4, .e8m0 = true),           \
    "OCP MXFP4 (ggml's layout): 32 e2m1 4-bit floats and an e8m0 power-of-two scale")                               \
  X(tq1_0,  34, 256,  54, qsub,   (52, -1),  (.offset = 1, .nibbles = true, .crumbs = true, .unit_scales = true),   \
    "ggml TQ1_0 (BitNet b1.58): 256 ternary weights d·{-1, 0, 1}, five base-3 digits a byte, a binary16 scale")     \
  X(tq2_0,  35, 256,  66, qsub,   (64, -1),  (.offset = 1, .nibbles = true, .crumbs = true, .unit_scales = true),   \
    "ggml TQ2_0 (BitNet b1.58): 256 ternary weights d·{-1, 0, 1}, 2 bits each, a binary16 scale")                   \
  X(q8_K,   15, 256, 292, none,   (-1, -1),  (),                                                                     \
    "ggml Q8_K, activations only: 256 int8 values, an f32 scale and sums of 16")
// clang-format on
