// What every MoE forward shares (inference, training, expert parallelism): the counting sort
// of a routing's pairs by expert, the experts that received pairs, and the sum of each
// token's weighted expert outputs plus the shared experts'. One definition, so that the three
// compute the same bits (include/ffn/moe.hpp states the order).
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/moe.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

// A routing's T·k (token, slot) pairs sorted by expert (one counting sort), tokens in
// increasing order within each: offsets[e] … offsets[e+1] are expert e's pairs ([E + 1]),
// pair_token[a] the token of sorted pair a, row_of[t·k + j] the sorted position of token
// t's slot j. Each expert's pairs are the batch it runs.
struct ExpertPairs {
  std::vector<int64_t> offsets, pair_token, row_of;
  std::vector<int64_t> pair_slot;  // sorted pair a's t·k + j (the inverse of row_of)
};
ExpertPairs sort_by_expert(const Routing& routing, int64_t experts);

// The experts that received pairs, in increasing index.
std::vector<int32_t> active_experts(const ExpertPairs& pairs);

// Expert e's pairs' rows of x gathered into in ([n_e][D]); with config.weight_input (Llama
// 4) each times its pair's routing weight, one f32 product per element.
void gather_expert_inputs(const MoeConfig& config, ConstMatrixView x, const Routing& routing, const ExpertPairs& pairs,
                          int32_t e, MatrixView in);

// y[t] = Σ_j w_tj · outputs[row_of[t·k + j]] (w_tj = 1 with config.weight_input, whose
// weights went into the experts' inputs) over the token's k slots in increasing expert
// index (fma from 0), then, when shared.data is not null, y[t] = fma(g_t, shared[t], y[t])
// with g_t = σ(shared_gate·x_t) (the dot an fma chain in increasing d) or 1 without the
// gate; g_t is written to shared_gates[t] when that is not null. outputs: [T·k][D] in
// sorted-pair order; x, shared, y: [T][D]. The sums run in the ISA's rows_axpy (the same
// bits on every ISA), each token on one thread, or at decode (fewer tokens than threads) a
// share of every token's columns on each.
void combine_expert_outputs(const MoeConfig& config, const MoeRouter& router, ConstMatrixView x, const Routing& routing,
                            const ExpertPairs& pairs, ConstMatrixView outputs, ConstMatrixView shared, MatrixView y,
                            ThreadPool& pool, float* shared_gates = nullptr);

}  // namespace ffn
