// A small byte-level language model built from the library's blocks, and its training:
// the test bed of `ffn compare`, in which the FFN variant is the one thing that changes.
//
//   context c: the previous K bytes (a fixed window)          [T][K] bytes
//   x₀ = concat_j E[c_j]                                      [T][K·E]  (E: [256][E], shared)
//   h₀ = x₀·W_inᵀ                                             [T][D]    (W_in: [D][K·E])
//   h_{l+1} = h_l + block_l(rmsnorm(h_l)·g_l)                 l = 0 … L−1, g_l: [D]
//   logits = (rmsnorm(h_L)·g_f)·W_outᵀ                        [T][256]  (W_out: [256][D])
//   loss = mean_t −log softmax(logits_t)[next byte]           nats per byte
// rmsnorm(x) = x / √(mean(x²) + 1e-5). No biases outside the blocks (blocks without bias).
//
// Determinism: the same seed gives the same weights, batches and losses bit for bit, for
// any thread count — the blocks' kernels are split-invariant and every reduction over
// tokens here runs in token order on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ffn/backward.hpp"
#include "ffn/block.hpp"
#include "ffn/collective.hpp"
#include "ffn/config.hpp"
#include "ffn/moe_train.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

struct ModelConfig {
  Variant variant;
  int64_t window = 8;     // K: bytes of context
  int64_t embed = 32;     // E: width of one byte's embedding
  int64_t d_model = 128;  // D
  int64_t hidden = 512;   // H of every block
  int64_t layers = 2;     // L
  // Mixture of experts: with experts > 0 every layer's FFN is a MoE block of `experts`
  // blocks of the variant at `hidden`, top_k of them per byte, routed by Mixtral's rule
  // (softmax, the top k renormalised), and the training loss gains `balance` times each
  // layer's load-balancing loss (ffn/moe_train.hpp). 0: dense blocks.
  int64_t experts = 0;
  int64_t top_k = 0;
  double balance = 0.01;
  bool moe() const { return experts > 0; }
};
// ffn::Error naming the field and value when a size is < 1 (or the block is invalid).
void validate(const ModelConfig& config);

// Parameters of a configuration: 256·E + D·K·E + L·(block + D) + D + 256·D, the block a
// MoE layer's router and all its experts when the model has experts.
int64_t model_parameters(const ModelConfig& config);
// Those one byte's prediction uses: as model_parameters, but a MoE layer counts its router
// and top_k experts (equal to model_parameters for dense models).
int64_t model_active_parameters(const ModelConfig& config);
// The MoE block of a layer of a model with experts (ffn::Error for dense models).
MoeConfig moe_layer_config(const ModelConfig& config);

// The byte text, split by position: the first 90% for training, the last 10% for validation.
class ByteData {
 public:
  explicit ByteData(std::string bytes);
  // Reads the whole file; ffn::Error naming the path if it cannot, or if either split
  // would hold fewer than window + 1 bytes (checked by the trainer against its window).
  static ByteData from_file(const std::string& path);
  const std::string& train() const { return train_; }
  const std::string& valid() const { return valid_; }

 private:
  std::string train_, valid_;
};

// T examples: context[t·K + j] is the byte j positions into the window before target[t].
struct Batch {
  int64_t window = 0;
  std::vector<uint8_t> context;  // [T][K]
  std::vector<uint8_t> target;   // [T]
  int64_t tokens() const { return static_cast<int64_t>(target.size()); }
};

// Training batch `step` of T examples: window end positions drawn uniformly from the split
// by a counter-based hash of (seed, step, t) — the same batches for the same seed,
// whatever model is trained on them. ffn::Error if the split is shorter than K + 1 bytes.
Batch sample_batch(const std::string& split, int64_t window, int64_t tokens, uint64_t seed, int64_t step);
// T evenly spaced examples of the split (all of them when it holds fewer): the fixed
// validation set.
Batch spaced_batch(const std::string& split, int64_t window, int64_t tokens);

struct ModelGradients {
  Matrix embed, in_proj;
  std::vector<BlockGradients> blocks;  // L dense blocks, or none when the model has experts
  std::vector<MoeGradients> moe;       // L MoE blocks, or none
  std::vector<Matrix> norm_gain;
  Matrix final_gain, out_proj;
};

// One parameter tensor seen flat, with its gradient: what the optimizer walks over.
struct ParameterRef {
  std::string name;
  float* value = nullptr;
  float* grad = nullptr;
  int64_t size = 0;
  bool decay = false;  // weight decay on matrices (embeddings included), not on gains
};

class LanguageModel {
 public:
  // Initialisation: E uniform with unit variance; W_in, W_out and the blocks as
  // nn.Linear (uniform ±1/√fan_in, Block::random); gains 1. Keyed by seed and tensor.
  LanguageModel(const ModelConfig& config, uint64_t seed);

  const ModelConfig& config() const { return config_; }
  int64_t parameters() const { return model_parameters(config_); }

  // Mean cross-entropy (nats) of the batch. With grads, also ACCUMULATES (+=) d loss / dθ,
  // the loss being the cross-entropy plus, with experts, balance · Σ_layers loss_b.
  double forward_backward(const Batch& batch, ModelGradients* grads, ThreadPool* pool = nullptr);
  double loss(const Batch& batch, ThreadPool* pool = nullptr) { return forward_backward(batch, nullptr, pool); }

  // The hook of an evaluation that changes the FFN and nothing else (activation-sparse
  // evaluation, train/sparse_eval.hpp): called once per layer, in order, as
  // block_forward(l, blocks[l], x, y) with x the block's normed input [T][D] and y [T][D]
  // for it to write; the model adds the residual after, as it does to Block::forward's y.
  using BlockForward = std::function<void(size_t layer, const Block& block, ConstMatrixView x, MatrixView y)>;
  // Mean cross-entropy of the batch (as loss()) with every block's forward done by
  // block_forward. Dense models only (ffn::Error for a model with experts); no gradients.
  double loss_with(const Batch& batch, const BlockForward& block_forward, ThreadPool* pool = nullptr);

  // With experts: the mean over layers of loss_b in the last forward (k at perfect
  // balance; 0 for dense models).
  double last_balance_loss() const;

  ModelGradients zero_gradients() const;
  // Every tensor in a fixed order (embed, in_proj, per layer gain then block, final_gain,
  // out_proj) paired with its gradient in grads.
  std::vector<ParameterRef> parameters_with(ModelGradients& grads);

  Matrix embed;                   // [256][E]
  Matrix in_proj;                 // [D][K·E]
  std::vector<Block> blocks;      // L dense blocks (or none, with experts)
  std::vector<TrainableMoe> moe;  // L MoE blocks (or none, without)
  std::vector<Matrix> norm_gain;  // L × [1][D]
  Matrix final_gain;              // [1][D]
  Matrix out_proj;                // [256][D]

 private:
  ModelConfig config_;
  // forward_backward and loss_with: the forward (blocks by block_forward when given), then
  // backward when grads is given.
  double run(const Batch& batch, ModelGradients* grads, const BlockForward* block_forward, ThreadPool* pool);
  // Activations of the last forward, kept for backward; reused while T stays the same.
  // (shared_ptr only so that the type can stay incomplete here; the model is move-only.)
  struct Workspace;
  std::shared_ptr<Workspace> work_;
};

struct TrainOptions {
  int64_t steps = 1000;
  int64_t batch = 128;           // examples (bytes predicted) per step
  double lr = 3e-3;              // peak learning rate
  int64_t warmup = 50;           // linear warm-up steps from lr/warmup to lr
  double min_lr_fraction = 0.1;  // cosine decay from lr to lr·this at the last step
  double weight_decay = 0.1;     // AdamW, decoupled: θ ← θ − lr·wd·θ
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double clip = 1.0;           // global gradient-norm clipping (≤ 0: none)
  uint64_t seed = 1;           // weights
  uint64_t data_seed = 1;      // batch order: the same for every variant trained with it
  int64_t eval_every = 100;    // steps between validation points of the curve
  int64_t eval_tokens = 4096;  // size of the fixed validation set
};
void validate(const TrainOptions& options);

// Learning rate at step s (0-based): lr·(s+1)/warmup during warm-up, then cosine decay
// to lr·min_lr_fraction at the last step.
double learning_rate(const TrainOptions& options, int64_t step);

// AdamW (Loshchilov & Hutter) over the tensors given, with PyTorch's order of updates:
// θ ← θ·(1 − lr·wd) (decay tensors only); m ← β₁m + (1−β₁)g; v ← β₂v + (1−β₂)g²;
// θ ← θ − lr·m̂/(√v̂ + ε), m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ). Element-wise, so any split of the
// work gives the same bits.
// The optimizer's state, for checkpoints: first and second moments per tensor (in the
// order of the ParameterRefs) and the steps taken.
struct AdamWState {
  std::vector<std::vector<float>> m, v;
  int64_t t = 0;
};

class AdamW {
 public:
  AdamW(std::vector<ParameterRef> params, const TrainOptions& options);
  void step(double lr);
  AdamWState& state() { return s_; }

 private:
  std::vector<ParameterRef> params_;
  AdamWState s_;
  TrainOptions o_;
};

// Global L2 norm of every gradient (summed in double, in tensor order), and if it exceeds
// max_norm > 0, every gradient scaled by max_norm / norm. Returns the norm before clipping.
double clip_gradients(const std::vector<ParameterRef>& params, double max_norm);

struct CurvePoint {
  int64_t step = 0;       // steps done
  double train_loss = 0;  // mean training loss over the steps since the previous point
  double valid_loss = 0;  // on the fixed validation set
};

struct TrainResult {
  std::vector<double> step_losses;  // training loss of every step
  std::vector<CurvePoint> curve;    // every eval_every steps and at the end
  double valid_loss = 0;            // final, nats per byte
  double seconds = 0;               // training steps only (not validation)
  double tokens_per_second = 0;
};

// A run's checkpoint: one safetensors file holding every parameter ("param.<name>"), the
// AdamW moments ("adam_m.<name>", "adam_v.<name>"), and in its metadata the step, the
// losses so far (as %.17g, exact) and a fingerprint of the model, options and data sizes.
// It is rewritten atomically (temporary file, then rename), so a kill leaves the previous
// one whole. Resuming restores all of it: batches depend only on (data_seed, step), so the
// rest of the run is bit-identical to an uninterrupted one.
struct CheckpointOptions {
  std::string path;     // the run's state file; empty: no checkpoints
  int64_t every = 0;    // save after every `every` steps and after the last; 0: only after the last
  bool resume = false;  // continue from path if it exists (ffn::Error if it is from another run)
};

// Trains model for options.steps steps. progress(step_done, loss) is called after every step.
// Data parallelism: with data_parallel, each of its size() processes (all holding the same
// model, all calling train with the same arguments) computes the loss and gradients of a
// contiguous share of every batch; the shares are summed across the processes (each
// weighted by its size) before clipping and the step, so every process takes the same
// step and the losses are the batch's. The result matches one process's up to rounding
// (the batch's mean is summed in another order). Only rank 0 writes checkpoints.
TrainResult train(LanguageModel& model, const ByteData& data, const TrainOptions& options, ThreadPool* pool = nullptr,
                  const std::function<void(int64_t, double)>& progress = {}, const CheckpointOptions& checkpoint = {},
                  Collective* data_parallel = nullptr);

}  // namespace ffn
