// Mixture-of-experts feed-forward blocks: a router picks k of E experts per token and the
// block's output is the weighted sum of their outputs (plus, in some families, shared
// experts every token passes through).
//
//   logits = x·W_routerᵀ (+ b_router)                    x: [T][D], W_router: [E][D]
//   experts, weights = the family's rule on logits       [T][k] each
//   y = Σ_j weights[t][j] · expert_{experts[t][j]}(x_t)  (+ gate_t · shared(x_t))
//
// Each expert is a dense block (ffn/inference_block.hpp) of the same configuration: every
// weight type runs, K-quants included. The families' routing rules (the Hugging Face
// modules' semantics):
//   softmax          Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, DBRX, DeepSeek-V2: p =
//                    softmax(logits) over all E, the k largest p; renormalised to sum 1 when
//                    normalize_top_k; times routed_scaling. With groups > 1, DeepSeek-V2's
//                    group_limited_greedy: the choice is made within the best `top_groups`
//                    groups, a group's score being its largest p (other groups' p count as 0).
//   sigmoid          DeepSeek-V3, Kimi K2: s = σ(logits); the choice is made on s + the
//                    correction bias (choice_bias), within the best `top_groups` of `groups`
//                    equal groups of experts (a group's score: the sum of its two best
//                    choice scores; experts of other groups count as 0 for the choice); the
//                    weights are the chosen experts' s, over their sum (+1e-20) when
//                    normalize_top_k, times routed_scaling.
//   softmax_top_k    gpt-oss, Granite-MoE: the k largest logits, softmax over those k, times
//                    routed_scaling (no groups).
//   sigmoid_top_k    Llama 4: the k largest logits, each weighted σ(logit) (renormalised when
//                    normalize_top_k), times routed_scaling (no groups).
// weight_input (Llama 4): each chosen expert runs on weight·x_t and its outputs are summed
// unweighted, y = Σ_j expert_j(w_tj·x_t) — not the same as w·expert(x) for a nonlinear
// expert. Inference only (MoeBlock); training and expert parallelism refuse it.
// Contract of the router: logits in f32 from the f32 router weights, every token's the same
// fixed sequence of operations (bit-identical for any thread count and batch); scores with
// f32 exp; an exact tie between two experts' scores is won by the lower index (in a group
// choice too). Non-finite logits are an ffn::Error naming the token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/config.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"
#include "ffn/weight_type.hpp"

namespace ffn {

enum class RouterScoring { softmax, sigmoid, softmax_top_k, sigmoid_top_k };
std::string_view router_scoring_name(RouterScoring s);
RouterScoring parse_router_scoring(std::string_view name);  // ffn::Error listing the names

struct MoeConfig {
  BlockConfig expert;             // every routed expert: variant, D, expert hidden, bias
  int64_t experts = 0;            // E
  int64_t top_k = 0;              // k, 1 ≤ k ≤ E
  RouterScoring scoring = RouterScoring::softmax;
  bool normalize_top_k = true;    // renormalise the k weights (norm_topk_prob)
  double routed_scaling = 1.0;    // DeepSeek's routed_scaling_factor (every scoring)
  int64_t groups = 1;             // DeepSeek's n_group: E must be a multiple (softmax, sigmoid)
  int64_t top_groups = 1;         // DeepSeek's topk_group, ≤ groups
  bool router_bias = false;       // gpt-oss: a bias added to the logits
  bool choice_bias = false;       // DeepSeek: e_score_correction_bias, for choosing only
  int64_t shared_hidden = 0;      // hidden units of the shared experts together (0: none)
  bool shared_gate = false;       // Qwen2-MoE: shared output × σ(shared_gate·x)
  bool weight_input = false;      // Llama 4: the routing weight multiplies the expert's input

  int64_t d_model() const { return expert.d_model; }
};

// Throws ffn::Error naming the field: k ∉ [1, E], E < 1, groups not dividing E, top_groups
// ∉ [1, groups], fewer than k experts in the top groups, with sigmoid scoring a group of
// fewer than 2 experts (its score is the sum of its two best), groups with softmax_top_k or
// sigmoid_top_k, routed_scaling not finite or ≤ 0, shared_gate
// without shared experts, an invalid expert configuration.
void validate(const MoeConfig& config);

// The router's f32 parameters.
struct MoeRouter {
  Matrix weight;       // [E][D]
  Matrix bias;         // [1][E] (router_bias), else empty
  Matrix choice_bias;  // [1][E] (choice_bias), else empty
  Matrix shared_gate;  // [1][D] (shared_gate), else empty
};

// Which experts each token goes to and with what weight, in the order chosen (best first).
struct Routing {
  int64_t tokens = 0, k = 0;
  std::vector<int32_t> experts;  // [T][k]
  std::vector<float> weights;    // [T][k]
};

// The router alone: config's rule on x ([T][D]). ffn::Error on a shape mismatch or a token
// whose logits are not finite (a NaN or Inf in x or the router).
Routing route(const MoeConfig& config, const MoeRouter& router, ConstMatrixView x, ThreadPool* pool = nullptr);
// The same, also writing each token's logits (bias added, before scoring) to logits, [T][E]
// (what training differentiates, and what a load-balancing loss is made from).
Routing route(const MoeConfig& config, const MoeRouter& router, ConstMatrixView x, MatrixView logits,
              ThreadPool* pool = nullptr);

// The inference form of a MoE block: the router in f32, each expert an InferenceBlock in
// its own stored types.
class MoeBlock {
 public:
  // experts: E blocks of config.expert's configuration; shared: a block of D and
  // config.shared_hidden when the config has shared experts. ffn::Error naming the expert
  // or tensor whose shape or presence disagrees with the config.
  MoeBlock(const MoeConfig& config, MoeRouter router, std::vector<InferenceBlock> experts,
           std::optional<InferenceBlock> shared = std::nullopt);
  // From f32 blocks (tests, training results), every matrix stored as `types`.
  static MoeBlock from_blocks(const MoeConfig& config, MoeRouter router, const std::vector<Block>& experts,
                              const std::optional<Block>& shared, const MatrixTypes& types, ThreadPool* pool = nullptr);

  const MoeConfig& config() const { return config_; }
  const MoeRouter& router() const { return router_; }
  const InferenceBlock& expert(int64_t e) const { return experts_.at(static_cast<size_t>(e)); }
  const std::optional<InferenceBlock>& shared() const { return shared_; }
  // Each routed expert's matrix types (all experts share them when loaded from one file).
  const MatrixTypes& expert_types() const { return experts_.front().types(); }

  // Bytes of all weights as stored, and of what one decoded token reads: the router (and
  // shared gate) in f32, k experts and the shared experts.
  int64_t weight_bytes() const;
  int64_t decode_bytes() const;
  std::string describe() const;

  Routing route(ConstMatrixView x, ThreadPool* pool = nullptr) const;
  // y = block(x), x and y [T][D], no aliasing. Tokens are grouped by expert (a counting
  // sort), each expert runs its tokens as one batch (with weight_input, each token's row
  // times its weight, one f32 product per element), and y[t] sums its experts' weighted
  // (weight_input: unweighted) outputs in increasing expert index, then adds the shared experts' output: bit-identical
  // for any thread count and whatever other tokens share the batch. Only the experts some
  // token chose are read.
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr) const;

 private:
  // Tokens per pass of the forward (its [T·k][D] buffers of expert inputs and outputs are
  // sized by it), and the mean tokens per chosen expert up to which experts are shared out
  // among the threads, each run whole on one, when there are at least as many as threads.
  static constexpr int64_t kTokenChunk = 512;
  static constexpr int64_t kTokensPerExpertForSharing = 16;
  void forward_chunk(ConstMatrixView x, MatrixView y, ThreadPool& pool) const;

  MoeConfig config_;
  MoeRouter router_;
  std::vector<InferenceBlock> experts_;
  std::optional<InferenceBlock> shared_;
};

// Accounting of one MoE layer: parameters (all, and those one token uses), and the bytes a
// batch of T tokens reads under uniform routing.
struct MoeAccounting {
  int64_t router_parameters = 0;      // E·D (+ E biases, + D shared gate)
  int64_t expert_parameters = 0;      // of one routed expert
  int64_t shared_parameters = 0;      // of the shared experts together
  int64_t total_parameters = 0;       // router + E experts + shared
  int64_t active_parameters = 0;      // router + k experts + shared
  int64_t active_matmul_flops = 0;    // per token, 2 per multiply-add (router included)
};
MoeAccounting account(const MoeConfig& config);
// Expected number of distinct experts T tokens touch when each picks k of E uniformly at
// random: E·(1 − (1 − k/E)^T).
double expected_experts_touched(const MoeConfig& config, int64_t tokens);
// Bytes T tokens read with every matrix stored as `types` (router f32): router, shared and
// the expected distinct experts'; nullopt when a type's block does not divide a row.
std::optional<double> moe_batch_weight_bytes(const MoeConfig& config, const MatrixTypes& types, int64_t tokens);

// Presets: the MoE layers of released models, with where their numbers come from.
struct MoePreset {
  std::string name;
  std::string model;
  std::string source;
  MoeConfig config;
  int64_t n_layers = 0;
  int64_t dense_layers = 0;     // leading dense layers (DeepSeek's first_k_dense_replace)
  int64_t dense_hidden = 0;     // their hidden size
};
const std::vector<MoePreset>& moe_presets();
const MoePreset* find_moe_preset(std::string_view name);  // nullptr when none has the name

}  // namespace ffn
