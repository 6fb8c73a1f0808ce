// The training form of a mixture-of-experts block: f32 router and experts (Blocks), a
// forward that keeps what backward needs, and backward — the gradients of the experts, the
// shared experts, the shared-expert gate and the router — with the Switch Transformer /
// Mixtral load-balancing loss as an option. The inference form is MoeBlock (ffn/moe.hpp);
// the routing rules and their contract are stated there.
//
// Forward (x, y: [T][D]): y_t = Σ_j w_tj · expert_{e_tj}(x_t) (+ σ(g·x_t) · shared(x_t)),
// with (e_tj, w_tj) the router's choice from logits l_t = W_router·x_t (+ b).
//
// Backward, given dy [T][D]:
//   experts:   expert e's upstream gradient on token t is w_tj·dy_t; its parameters'
//              gradients and its dx as a dense block's (ffn/backward.hpp).
//   weights:   dw_tj = dy_t · expert_{e_tj}(x_t).
//   router:    dl_t from dw_t through the rule that made w_t from l_t (the choice of
//              experts itself is piecewise constant and passes no gradient):
//                softmax, renormalised, and softmax_top_k (both r times a softmax over
//                the k chosen logits):  dl_e = w_e·(dw_e − Σ_j w_j·dw_j / r) for chosen
//                e, else 0;
//                softmax, not renormalised (w = r·p, p the softmax over all E):
//                                 dl_e = [e chosen]·w_e·dw_e − p_e·Σ_j w_j·dw_j;
//                sigmoid and sigmoid_top_k (s = σ(l), w = r·s/Z with Z = Σ_chosen s
//                (+ 1e-20 for sigmoid), or w = r·s):
//                                 ds_e = r·(dw_e/Z − Σ_j dw_j·s_j/Z²) (or r·dw_e);
//                                 dl_e = ds_e·s_e·(1 − s_e).
//              weight_input (Llama 4) has no training form: TrainableMoe refuses it.
//              dW_router += dlᵀ·x, db += Σ_t dl, dx += dl·W_router. The choice bias
//              (DeepSeek's e_score_correction_bias) takes no gradient: it only orders the
//              choice (DeepSeek adjusts it by a rule outside gradient descent).
//   shared:    upstream σ(z_t)·dy_t; with the gate, dz_t = (dy_t · shared(x_t))·σ'(z_t),
//              dg += Σ_t dz_t·x_t, dx += dz_t·g.
//   balance:   loss_b = E · Σ_e f_e · P_e, f_e = (tokens routed to e, over the k slots)/T,
//              P_e = mean_t softmax(l_t)_e — the Switch Transformer loss as Hugging Face's
//              load_balancing_loss_func computes it for one layer (k at perfect balance).
//              f is piecewise constant; the gradient flows through P:
//                dl_te += α · p_te · (c_e − Σ_e' p_te'·c_e') / T,  c_e = E·f_e.
//              (Hugging Face's Mixtral pools the tokens of all layers into one f and P; here
//              each layer has its own loss and a model sums them, as Switch defines it.)
//
// Determinism: every result is bit-identical for any thread count; sums over tokens run in
// token order, a token's k expert terms in increasing expert index.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/moe.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

struct TrainableMoe {
  MoeConfig config;
  MoeRouter router;            // shapes as MoeBlock's
  std::vector<Block> experts;  // E blocks of config.expert
  std::optional<Block> shared; // of D and config.shared_hidden, when the config has some

  // nn.Linear's initialisation for the router (uniform ±1/√D, bias too) and each expert
  // (Block::random); choice bias 0; shared gate as a Linear(D, 1). Keyed by seed.
  static TrainableMoe random(const MoeConfig& config, uint64_t seed);
  // ffn::Error naming what disagrees with the config (as MoeBlock's constructor).
  void validate() const;
  // The same weights as an inference block, every matrix stored as f32.
  MoeBlock to_inference(ThreadPool* pool = nullptr) const;
};

// Gradients of every trained parameter; empty matrices for parameters the config lacks.
struct MoeGradients {
  Matrix router, router_bias, shared_gate;  // [E][D], [1][E], [1][D]
  std::vector<BlockGradients> experts;      // E
  std::optional<BlockGradients> shared;
};
MoeGradients zero_gradients(const MoeConfig& config);

// What forward_train keeps for backward (storage reused while the shapes stay): the routing
// and the logits, which a caller may read, and the rest of the forward's state (the pairs
// sorted by expert, their inputs and outputs, the experts' caches, backward's temporaries),
// which only forward_train and backward use (src/train/moe_train.cpp).
struct MoeCache {
  int64_t tokens = 0;
  Routing routing;          // [T][k]
  Matrix logits;            // [T][E], bias added, before scoring
  double balance_loss = 0;  // loss_b of this forward (always computed)

  struct Work;
  std::unique_ptr<Work> work;  // made by the first forward_train

  MoeCache();
  ~MoeCache();
  MoeCache(MoeCache&&) noexcept;
  MoeCache& operator=(MoeCache&&) noexcept;
};

// y = block(x) (the same rule and order as MoeBlock::forward; f32 experts computed by
// Block), filling cache. Returns the balance loss loss_b. x, y: [T][D], no aliasing.
double forward_train(const TrainableMoe& moe, ConstMatrixView x, MatrixView y, MoeCache& cache,
                     ThreadPool* pool = nullptr);

// Given dy [T][D] for the forward_train(x) that filled cache (whose scratch it uses): ACCUMULATES (+=) every
// parameter's gradient of (dy·y + balance·loss_b) into grads and WRITES dx [T][D] (skipped
// when dx.data is null). ffn::Error on shapes that disagree (naming them).
void backward(const TrainableMoe& moe, ConstMatrixView x, MoeCache& cache, ConstMatrixView dy, MatrixView dx,
              MoeGradients& grads, double balance = 0.0, ThreadPool* pool = nullptr);

}  // namespace ffn
