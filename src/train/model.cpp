// The byte-level language model (train/train.hpp): initialisation, forward and
// backward through embedding → W_in → L × (RMSNorm → block, residual) → RMSNorm → W_out.
#include <cmath>
#include <string>

#include "core/counter_random.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "train/layers.hpp"
#include "train/train.hpp"

namespace ffn {
namespace {

using namespace train_detail;

constexpr int64_t kVocab = 256;  // byte values

void fill(Matrix& m, float v) {
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = v;
}

// The blocks have no bias: the model has none anywhere, so the variant is all that differs.
BlockConfig block_config(const ModelConfig& c) { return {c.variant, c.d_model, c.hidden, false}; }

}  // namespace

MoeConfig moe_layer_config(const ModelConfig& c) {
  if (!c.moe()) throw Error("the model has no experts (experts = " + std::to_string(c.experts) + ")");
  MoeConfig m;
  m.expert = block_config(c);
  m.experts = c.experts;
  m.top_k = c.top_k;
  m.scoring = RouterScoring::softmax;
  m.normalize_top_k = true;
  return m;
}

void validate(const ModelConfig& c) {
  auto positive = [](const char* field, int64_t v) {
    if (v < 1) throw Error(std::string("model ") + field + " = " + std::to_string(v) + ": must be ≥ 1");
  };
  positive("window", c.window);
  positive("embed", c.embed);
  positive("d_model", c.d_model);
  positive("hidden", c.hidden);
  positive("layers", c.layers);
  validate(block_config(c));
  if (c.experts < 0) throw Error("model experts = " + std::to_string(c.experts) + ": must be ≥ 0 (0: dense)");
  if (c.moe()) {
    if (c.top_k < 1 || c.top_k > c.experts)
      throw Error("model top_k = " + std::to_string(c.top_k) + ": must be in [1, experts = " +
                  std::to_string(c.experts) + "]");
    if (!std::isfinite(c.balance) || c.balance < 0)
      throw Error("model balance = " + std::to_string(c.balance) + ": must be finite and ≥ 0");
  }
}

namespace {
int64_t parameters_with_block(const ModelConfig& c, int64_t block) {
  return kVocab * c.embed + c.d_model * c.window * c.embed + c.layers * (block + c.d_model) + c.d_model +
         kVocab * c.d_model;
}
}  // namespace

int64_t model_parameters(const ModelConfig& c) {
  validate(c);
  return parameters_with_block(
      c, c.moe() ? account(moe_layer_config(c)).total_parameters : account(block_config(c)).parameters);
}

int64_t model_active_parameters(const ModelConfig& c) {
  validate(c);
  return parameters_with_block(
      c, c.moe() ? account(moe_layer_config(c)).active_parameters : account(block_config(c)).parameters);
}

// Activations of one forward, for backward. h[l]: [T][D] residual stream entering layer l
// (h[L] leaves the last); n[l]: [T][D] normed input of block l (n[L]: the final norm's
// output); rstd[l]: [T].
struct LanguageModel::Workspace {
  int64_t tokens = -1;
  Matrix x0, logits, dlogits, dh, dn, dx0;
  std::vector<Matrix> h, n, rstd;
  std::vector<ForwardCache> cache;
  std::vector<MoeCache> moe_cache;
  double balance_loss = 0;  // mean over layers, last forward

  void shape(const ModelConfig& c, int64_t T) {
    if (T == tokens) return;
    tokens = T;
    x0 = Matrix(T, c.window * c.embed);
    dx0 = Matrix(T, c.window * c.embed);
    logits = Matrix(T, kVocab);
    dlogits = Matrix(T, kVocab);
    dh = Matrix(T, c.d_model);
    dn = Matrix(T, c.d_model);
    h.clear();
    n.clear();
    rstd.clear();
    for (int64_t l = 0; l <= c.layers; ++l) {
      h.emplace_back(T, c.d_model);
      n.emplace_back(T, c.d_model);
      rstd.emplace_back(1, T);
    }
    cache.clear();
    cache.resize(static_cast<size_t>(c.layers));
    moe_cache.clear();
    moe_cache.resize(c.moe() ? static_cast<size_t>(c.layers) : 0);
  }
};

LanguageModel::LanguageModel(const ModelConfig& config, uint64_t seed)
    : config_(config), work_(std::make_shared<Workspace>()) {
  validate(config_);
  const ModelConfig& c = config_;
  embed = Matrix(kVocab, c.embed);
  fill_uniform(embed, seed, 101, std::sqrt(3.0));  // unit variance, as nn.Embedding's N(0, 1)
  in_proj = Matrix(c.d_model, c.window * c.embed);
  fill_uniform(in_proj, seed, 102, 1.0 / std::sqrt(double(c.window * c.embed)));
  for (int64_t l = 0; l < c.layers; ++l) {
    // Each block's own seed, so layers differ; Block::random keys its tensors by it.
    if (c.moe())
      moe.push_back(TrainableMoe::random(moe_layer_config(c), splitmix64(seed + 1000 + uint64_t(l))));
    else
      blocks.push_back(Block::random(block_config(c), splitmix64(seed + 1000 + uint64_t(l))));
    norm_gain.emplace_back(1, c.d_model);
    fill(norm_gain.back(), 1.0f);
  }
  final_gain = Matrix(1, c.d_model);
  fill(final_gain, 1.0f);
  out_proj = Matrix(kVocab, c.d_model);
  fill_uniform(out_proj, seed, 103, 1.0 / std::sqrt(double(c.d_model)));
}

ModelGradients LanguageModel::zero_gradients() const {
  const ModelConfig& c = config_;
  ModelGradients g;
  g.embed = Matrix(kVocab, c.embed);
  g.in_proj = Matrix(c.d_model, c.window * c.embed);
  for (int64_t l = 0; l < c.layers; ++l) {
    if (c.moe())
      g.moe.push_back(ffn::zero_gradients(moe_layer_config(c)));
    else
      g.blocks.push_back(ffn::zero_gradients(block_config(c)));
    g.norm_gain.emplace_back(1, c.d_model);
  }
  g.final_gain = Matrix(1, c.d_model);
  g.out_proj = Matrix(kVocab, c.d_model);
  return g;
}

std::vector<ParameterRef> LanguageModel::parameters_with(ModelGradients& g) {
  std::vector<ParameterRef> out;
  auto add = [&](std::string name, Matrix& w, Matrix& dw, bool decay) {
    if (w.empty()) return;
    if (dw.rows() != w.rows() || dw.cols() != w.cols())
      throw Error("gradient of " + name + " is " + std::to_string(dw.rows()) + "×" + std::to_string(dw.cols()) +
                  ", the parameter " + std::to_string(w.rows()) + "×" + std::to_string(w.cols()));
    out.push_back({std::move(name), w.data(), dw.data(), w.size(), decay});
  };
  add("embed", embed, g.embed, true);
  add("in_proj", in_proj, g.in_proj, true);
  auto add_block = [&](const std::string& p, Block& b, BlockGradients& bg) {
    auto& w = b.weights();
    add(p + "gate", w.gate, bg.gate, true);
    add(p + "up", w.up, bg.up, true);
    add(p + "down", w.down, bg.down, true);
  };
  for (size_t l = 0; l < norm_gain.size(); ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "norm", norm_gain[l], g.norm_gain[l], false);
    if (!config_.moe()) {
      add_block(p, blocks[l], g.blocks[l]);
      continue;
    }
    add(p + "router", moe[l].router.weight, g.moe[l].router, true);
    for (size_t e = 0; e < moe[l].experts.size(); ++e)
      add_block(p + "experts." + std::to_string(e) + ".", moe[l].experts[e], g.moe[l].experts.at(e));
  }
  add("final_norm", final_gain, g.final_gain, false);
  add("out_proj", out_proj, g.out_proj, true);
  return out;
}

double LanguageModel::forward_backward(const Batch& batch, ModelGradients* grads, ThreadPool* pool) {
  return run(batch, grads, nullptr, pool);
}

double LanguageModel::loss_with(const Batch& batch, const BlockForward& block_forward, ThreadPool* pool) {
  if (config_.moe())
    throw Error("loss_with replaces dense blocks' forward: the model has " + std::to_string(config_.experts) +
                " experts per layer");
  if (!block_forward) throw Error("loss_with: no block forward given");
  return run(batch, nullptr, &block_forward, pool);
}

double LanguageModel::run(const Batch& batch, ModelGradients* grads, const BlockForward* block_forward,
                          ThreadPool* pool_arg) {
  const ModelConfig& c = config_;
  if (batch.window != c.window)
    throw Error("batch window = " + std::to_string(batch.window) + ": the model's is " + std::to_string(c.window));
  const int64_t T = batch.tokens();
  if (T < 1) throw Error("batch tokens = 0: need at least one example");
  if (static_cast<int64_t>(batch.context.size()) != T * c.window)
    throw Error("batch context holds " + std::to_string(batch.context.size()) +
                " bytes, expected tokens·window = " + std::to_string(T * c.window));
  ThreadPool& pool = pool_arg ? *pool_arg : default_thread_pool();
  Workspace& w = *work_;
  w.shape(c, T);
  const auto L = static_cast<size_t>(c.layers);
  w.balance_loss = 0;

  // Forward.
  embedding_gather(embed.view(), batch.context.data(), c.window, w.x0.view());
  linear_forward(pool, w.x0.view(), in_proj.view(), w.h[0].view());
  for (size_t l = 0; l < L; ++l) {
    rmsnorm_forward(pool, w.h[l].view(), norm_gain[l].data(), w.n[l].view(), w.rstd[l].data());
    // The block writes y into h[l+1], then the residual is added.
    if (c.moe())
      w.balance_loss += forward_train(moe[l], w.n[l].view(), w.h[l + 1].view(), w.moe_cache[l], &pool) / double(L);
    else if (block_forward)
      (*block_forward)(l, blocks[l], w.n[l].view(), w.h[l + 1].view());
    else if (grads)
      forward_train(blocks[l], w.n[l].view(), w.h[l + 1].view(), w.cache[l], false, &pool);
    else
      blocks[l].forward(w.n[l].view(), w.h[l + 1].view(), &pool);
    float* next = w.h[l + 1].data();
    const float* prev = w.h[l].data();
    for (int64_t i = 0; i < w.h[l].size(); ++i) next[i] += prev[i];
  }
  rmsnorm_forward(pool, w.h[L].view(), final_gain.data(), w.n[L].view(), w.rstd[L].data());
  linear_forward(pool, w.n[L].view(), out_proj.view(), w.logits.view());
  const double loss =
      softmax_cross_entropy(pool, w.logits.view(), batch.target.data(), grads ? w.dlogits.view() : MatrixView{});
  if (!grads) return loss;

  // Backward. dh holds d loss / d h[l] as l goes down; dn the gradient of a norm's output.
  ModelGradients& g = *grads;
  if ((c.moe() ? g.moe.size() : g.blocks.size()) != L || g.norm_gain.size() != L)
    throw Error("gradients hold " + std::to_string(c.moe() ? g.moe.size() : g.blocks.size()) + " blocks, the model " +
                std::to_string(L));
  parameters_with(g);  // checks every other gradient's shape (ffn::Error naming the tensor)
  linear_backward(pool, w.n[L].view(), out_proj.view(), w.dlogits.view(), w.dn.view(), g.out_proj.view());
  fill(w.dh, 0.0f);
  rmsnorm_backward(pool, w.h[L].view(), final_gain.data(), w.rstd[L].data(), w.dn.view(), w.dh.view(),
                   g.final_gain.data());
  for (size_t l = L; l-- > 0;) {
    // d h[l] = d h[l+1] (residual) + norm backward of the block's input gradient.
    if (c.moe())
      backward(moe[l], w.n[l].view(), w.moe_cache[l], w.dh.view(), w.dn.view(), g.moe[l], c.balance, &pool);
    else
      backward(blocks[l], w.n[l].view(), w.cache[l], w.dh.view(), w.dn.view(), g.blocks[l], &pool);
    rmsnorm_backward(pool, w.h[l].view(), norm_gain[l].data(), w.rstd[l].data(), w.dn.view(), w.dh.view(),
                     g.norm_gain[l].data());
  }
  linear_backward(pool, w.x0.view(), in_proj.view(), w.dh.view(), w.dx0.view(), g.in_proj.view());
  embedding_scatter_add(w.dx0.view(), batch.context.data(), c.window, g.embed.view());
  return loss;
}

double LanguageModel::last_balance_loss() const { return work_->balance_loss; }

}  // namespace ffn
