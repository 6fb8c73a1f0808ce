// What every MoE forward shares (inference, training, expert parallelism) besides the
// counting sort (sort_by_expert, ffn/moe.hpp): the experts that received pairs, and the sum
// of each token's weighted expert outputs plus the shared experts'. One definition, so that
// the three compute the same bits (include/ffn/moe.hpp states the order).
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/moe.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

// The experts that received pairs, in increasing index.
std::vector<int32_t> active_experts(const ExpertPairs& pairs);

// y[t] = Σ_j w_tj · outputs[row_of[t·k + j]] over the token's k slots in increasing expert
// index (fma from 0), then, when shared.data is not null, y[t] = fma(g_t, shared[t], y[t])
// with g_t = σ(shared_gate·x_t) (the dot an fma chain in increasing d) or 1 without the
// gate; g_t is written to shared_gates[t] when that is not null. outputs: [T·k][D] in
// sorted-pair order; x, shared, y: [T][D]. Each token's row on one thread.
void combine_expert_outputs(const MoeConfig& config, const MoeRouter& router, ConstMatrixView x,
                            const Routing& routing, const ExpertPairs& pairs, ConstMatrixView outputs,
                            ConstMatrixView shared, MatrixView y, ThreadPool& pool, float* shared_gates = nullptr);

}  // namespace ffn
