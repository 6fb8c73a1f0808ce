// MoeBlock: the router, then the tokens grouped by expert and each expert's group run as
// one batch through the dense inference path.
//
// Forward of T tokens (x, y: [T][D]):
//   1. routing [T][k] (router.cpp);
//   2. a counting sort of the T·k (token, slot) pairs by expert: offsets[e] … offsets[e+1]
//      list expert e's tokens in increasing token order;
//   3. each expert that has tokens: their rows gathered into rows offsets[e] … of a [T·k][D]
//      buffer, and run as one batch through the expert's block into the same rows of
//      another. When there are at least as many chosen experts as threads, each with few
//      tokens, the experts are shared out among the threads, each run whole on one (no
//      barrier at all). Otherwise every chosen expert's batch, and the shared experts' on
//      all T tokens, run in one grouped pass (inference_stages.hpp, DenseBatch: four pool
//      jobs in all, the threads' chunks of panels running on from one expert into the next)
//      — where one forward an expert would end each of its stages on a barrier: at decode,
//      Qwen3-30B-A3B's 8 experts on 16 threads would be 16 barriers around products of 24
//      panels. An expert whose block is gate-first (sparse decode) runs its own forward;
//   4. y[t] = Σ weight·out over its k rows in increasing expert index, each token's row by
//      one thread (no atomics);
//   5. the shared experts' output added, y[t] += gate_t · shared(x_t).
// Batches are taken kTokenChunk tokens at a time, which bounds the [T·k][D] buffers.
// A token's y is thus the same chain of operations whatever else is in the batch (the dense
// path's outputs are batch- and thread-independent, and a token's experts are summed in
// increasing index), and only the chosen experts' weights are read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "block/inference_panels.hpp"
#include "block/inference_stages.hpp"
#include "block/view_checks.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "ffn/moe.hpp"
#include "moe/expert_pairs.hpp"
#include "moe/expert_schedule.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

std::string config_text(const BlockConfig& c) {
  return variant_name(c.variant) + " d_model " + std::to_string(c.d_model) + " hidden " + std::to_string(c.hidden) +
         (c.bias ? " with bias" : " without bias");
}

void require_config(const BlockConfig& have, const BlockConfig& want, const std::string& what) {
  if (have.variant != want.variant || have.d_model != want.d_model || have.hidden != want.hidden ||
      have.bias != want.bias)
    throw Error(what + " is " + config_text(have) + ", expected " + config_text(want));
}

BlockConfig shared_config(const MoeConfig& c) {
  return BlockConfig{c.expert.variant, c.d_model(), c.shared_hidden, c.expert.bias, 0.0};
}

}  // namespace

MoeBlock::MoeBlock(const MoeConfig& config, MoeRouter router, std::vector<InferenceBlock> experts,
                   std::optional<InferenceBlock> shared)
    : config_(config), router_(std::move(router)), experts_(std::move(experts)), shared_(std::move(shared)) {
  validate(config_);
  if (static_cast<int64_t>(experts_.size()) != config_.experts)
    throw Error("the block has " + std::to_string(experts_.size()) + " experts, the configuration says " +
                std::to_string(config_.experts));
  for (size_t e = 0; e < experts_.size(); ++e)
    require_config(experts_[e].config(), config_.expert, "expert " + std::to_string(e));
  if (config_.shared_hidden > 0 && !shared_)
    throw Error("the configuration has shared experts (hidden " + std::to_string(config_.shared_hidden) +
                ") but none were given");
  if (config_.shared_hidden == 0 && shared_) throw Error("shared experts given, but the configuration has none");
  if (shared_) require_config(shared_->config(), shared_config(config_), "the shared expert");
  // route() checks the router's shapes; do it once here so a bad router fails at load.
  (void)ffn::route(config_, router_, ConstMatrixView{nullptr, 0, config_.d_model(), config_.d_model()});
}

MoeBlock MoeBlock::from_blocks(const MoeConfig& config, MoeRouter router, const std::vector<Block>& experts,
                               const std::optional<Block>& shared, const MatrixTypes& types, ThreadPool* pool) {
  std::vector<InferenceBlock> inference;
  inference.reserve(experts.size());
  for (const Block& b : experts) inference.emplace_back(b, types, pool);
  std::optional<InferenceBlock> s;
  if (shared) s.emplace(*shared, types, pool);
  return MoeBlock(config, std::move(router), std::move(inference), std::move(s));
}

int64_t MoeBlock::weight_bytes() const {
  int64_t bytes = 4 * account(config_).router_parameters;
  for (const auto& e : experts_) bytes += e.weight_bytes();
  if (shared_) bytes += shared_->weight_bytes();
  return bytes;
}

int64_t MoeBlock::decode_bytes() const {
  return 4 * account(config_).router_parameters + config_.top_k * experts_.front().weight_bytes() +
         (shared_ ? shared_->weight_bytes() : 0);
}

std::string MoeBlock::describe() const {
  std::string out = "router f32 [" + std::to_string(config_.experts) + "][" + std::to_string(config_.d_model()) +
                    "], " + std::string(router_scoring_name(config_.scoring)) + ", top " +
                    std::to_string(config_.top_k) + (config_.weight_input ? ", weights on the experts' inputs" : "") +
                    "; experts: " + experts_.front().describe();
  if (shared_) out += "; shared: " + shared_->describe();
  return out;
}

Routing MoeBlock::route(ConstMatrixView x, ThreadPool* pool) const { return ffn::route(config_, router_, x, pool); }

void MoeBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  const int64_t D = config_.d_model(), T = x.rows;
  views::check_forward_views(x, y, D);
  if (T == 0) return;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  for (int64_t t0 = 0; t0 < T; t0 += kTokenChunk) {
    const int64_t n = std::min(kTokenChunk, T - t0);
    forward_chunk(ConstMatrixView{x.data + t0 * x.stride, n, D, x.stride},
                  MatrixView{y.data + t0 * y.stride, n, D, y.stride}, p);
  }
}

void MoeBlock::forward_chunk(ConstMatrixView x, MatrixView y, ThreadPool& p) const {
  const int64_t D = config_.d_model(), k = config_.top_k, T = x.rows;
  const Routing r = route(x, &p);
  const ExpertPairs pairs = sort_by_expert(r, config_.experts);
  const std::vector<int32_t> active = active_experts(pairs);

  // Expert e's tokens and outputs: rows offsets[e] … offsets[e+1] of `in` and `out` ([T·k][D]).
  const MatrixView in = scratch_matrix(Scratch::moe_tokens, T * k, D);
  const MatrixView out = scratch_matrix(Scratch::moe_outputs, T * k, D);
  auto rows_of = [&](MatrixView m, int32_t e) {
    return MatrixView{m.data + pairs.offsets[e] * D, pairs.offsets[e + 1] - pairs.offsets[e], D, D};
  };
  const MatrixView shared = shared_ ? scratch_matrix(Scratch::moe_shared, T, D) : MatrixView{};

  if (share_out_experts(p.size(), int64_t(active.size()), T * k, kTokensPerExpertForSharing)) {
    run_experts(p, active, T * k, kTokensPerExpertForSharing, [&](int32_t e, ThreadPool& on) {
      gather_expert_inputs(config_, x, r, pairs, e, rows_of(in, e));
      experts_[e].forward(rows_of(in, e), rows_of(out, e), &on);
    });
    if (shared_) shared_->forward(x, shared, &p);
    return combine_expert_outputs(config_, router_, x, r, pairs, out, shared, y, p);
  }

  p.run([&](int ith, int nth) {
    for (size_t i = size_t(ith); i < active.size(); i += size_t(nth))
      gather_expert_inputs(config_, x, r, pairs, active[i], rows_of(in, active[i]));
  });
  // Every expert's batch (and the shared experts') whose block runs the fused forward, in
  // one grouped pass, its buffers one after another in one scratch slot; a gate-first block
  // runs its own forward after.
  struct Run {
    const InferenceBlock* block;
    ConstMatrixView x;
    MatrixView y;
    int64_t bytes;  // its batch's buffers
  };
  std::vector<Run> grouped, own;
  auto add = [&](const InferenceBlock& block, ConstMatrixView bx, MatrixView by) {
    if (block.panels_->gate_first())
      own.push_back({&block, bx, by, 0});
    else
      grouped.push_back({&block, bx, by, inference::dense_batch_bytes(*block.panels_, bx.rows)});
  };
  for (int32_t e : active) add(experts_[e], rows_of(in, e), rows_of(out, e));
  if (shared_) add(*shared_, x, shared);
  int64_t bytes = 0;
  for (const Run& run : grouped) bytes += run.bytes;
  std::byte* buffer = scratch_bytes(Scratch::moe_batches, bytes);
  std::vector<inference::DenseBatch> batches;
  for (const Run& run : grouped) {
    batches.push_back(inference::dense_batch(*run.block->panels_, run.x, run.y, buffer));
    buffer += run.bytes;
  }
  inference::forward_dense_batches(batches.data(), int64_t(batches.size()), p);
  for (const Run& run : own) run.block->forward(run.x, run.y, &p);

  combine_expert_outputs(config_, router_, x, r, pairs, out, shared, y, p);
}

}  // namespace ffn
