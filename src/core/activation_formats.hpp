// The activation formats of the weight-type list (f32, bf16, q8_0, q8_K: what each weight
// type's panel kernels take, kernels/activation_rows.hpp) as the forward makes them: the bytes
// of a buffer for T rows, the rows' layout in it, and the quantiser that fills it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ffn/weight_type.hpp"
#include "kernels/activation_rows.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

// Bytes of the buffer for T rows of K values in `format` (0 for f32, which the kernels read
// in place); K must be a multiple of the format's block.
int64_t activation_bytes(WeightType format, int64_t T, int64_t K);

// The rows of `format` laid out in `buffer` (activation_bytes(format, T, K) bytes, 64-byte
// aligned: codes, then scales, then sums, each section 64-byte aligned), or for f32 the rows
// of x itself (x_stride floats apart; buffer unused).
kernels::ActivationRows activation_rows(WeightType format, std::byte* buffer, int64_t T, int64_t K,
                                        const float* x = nullptr, int64_t x_stride = 0);

// Values a unit of `format` covers, which the columns quantize_activations fills come in
// multiples of: 1 for f32, 2 for bf16's pairs, the q8 formats' blocks (32, 256).
int64_t activation_block(WeightType format);

// Columns [c0, c1) of tokens [t0, t0 + n) of `rows` (made by activation_rows, whose buffer
// this writes) made from x (x[t][k] at x + (t − t0)·ldx + k): bf16 rounded by the table's
// f32_to_bf16_rows (which writes the odd row's padding with its last pair), q8 blocks
// byte for byte ggml's quantize_row_q8_0 / quantize_row_q8_K with the sums of 16, by the
// table's f32_to_q8_rows (vectors where the ISA has them: the scalar loop's roundf a value
// cost 8 % of a q4_0 block at 8 tokens and more). c0 and c1 are multiples of
// activation_block(format). A non-finite value is an ffn::Error (q8); f32 has nothing to do.
void quantize_activations(const kernels::KernelTable& k, const kernels::ActivationRows& rows, int64_t t0, int64_t n,
                          int64_t c0, int64_t c1, const float* x, int64_t ldx);

}  // namespace ffn
