// MoeBlock: the router, then the tokens grouped by expert and each expert's group run as
// one batch through the dense inference path.
//
// Forward of T tokens (x, y: [T][D]):
//   1. routing [T][k] (router.cpp);
//   2. a counting sort of the T·k (token, slot) pairs by expert: offsets[e] … offsets[e+1]
//      list expert e's tokens in increasing token order;
//   3. each expert that has tokens: their rows gathered into an [n_e][D] batch and run
//      through the expert's InferenceBlock into rows offsets[e] … of a [T·k][D] buffer —
//      every expert on all threads in turn, or, when the experts get few tokens each, the
//      experts shared out among the threads, each on one;
//   4. y[t] = Σ weight·out over its k rows in increasing expert index, each token's row by
//      one thread (no atomics);
//   5. the shared experts over all T tokens, y[t] += gate_t · shared(x_t).
// Batches are taken kTokenChunk tokens at a time, which bounds the [T·k][D] buffer.
// A token's y is thus the same chain of operations whatever else is in the batch (the dense
// path's outputs are batch- and thread-independent, and a token's experts are summed in
// increasing index), and only the chosen experts' weights are read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

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

  // Expert e's outputs for its tokens, rows offsets[e] … offsets[e+1] of `out` ([T·k][D]).
  const MatrixView out = scratch_matrix(Scratch::moe_outputs, T * k, D);
  run_experts(p, active_experts(pairs), T * k, kTokensPerExpertForSharing, [&](int32_t e, ThreadPool& on) {
    const int64_t first = pairs.offsets[e], n = pairs.offsets[e + 1] - first;
    const MatrixView in = scratch_matrix(Scratch::moe_tokens, n, D);
    gather_expert_inputs(config_, x, r, pairs, e, in);
    experts_[e].forward(ConstMatrixView{in.data, n, D, D}, MatrixView{out.data + first * D, n, D, D}, &on);
  });

  MatrixView shared{};
  if (shared_) {
    shared = scratch_matrix(Scratch::moe_shared, T, D);
    shared_->forward(x, shared, &p);
  }
  combine_expert_outputs(config_, router_, x, r, pairs, out, shared, y, p);
}

}  // namespace ffn
