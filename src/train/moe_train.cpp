// Training passes of a mixture-of-experts block (include/ffn/moe_train.hpp states the
// gradients). The forward follows MoeBlock's order: routing, a counting sort of the
// (token, slot) pairs by expert, each expert's tokens as one batch, each token's k outputs
// summed in increasing expert index, then the shared experts.
#include "ffn/moe_train.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "block/view_checks.hpp"
#include "core/counter_random.hpp"
#include "ffn/error.hpp"
#include "kernels/kernels.hpp"
#include "moe/expert_pairs.hpp"
#include "moe/expert_schedule.hpp"
#include "train/layers.hpp"

namespace ffn {

// The forward's state beyond MoeCache's public fields.
struct MoeCache::Work {
  ExpertPairs pairs;                       // the (token, slot) pairs sorted by expert
  Matrix inputs;                           // [T·k][D] the pairs' x rows, sorted by expert
  Matrix outputs;                          // [T·k][D] each pair's expert output, unweighted
  std::vector<ForwardCache> expert_cache;  // E
  Matrix shared_out;                       // [T][D] shared(x), when there are shared experts
  std::vector<float> shared_gate;          // [T] σ(g·x_t), with the shared gate
  ForwardCache shared_cache;
  // backward's temporaries, kept here so that a training loop allocates them once:
  // [T·k][D] upstream gradients and dx of the pairs, [T][E] d logits, [T][D] the router's
  // and the shared experts' dx and the shared experts' upstream gradient, [T·k] dw, [T] dz.
  struct Scratch {
    Matrix dy_pairs, dx_pairs, dlogits, dx_router, dshared, dx_shared;
    std::vector<double> dw;
    std::vector<float> dz;
  } scratch;
};

MoeCache::MoeCache() = default;
MoeCache::~MoeCache() = default;
MoeCache::MoeCache(MoeCache&&) noexcept = default;
MoeCache& MoeCache::operator=(MoeCache&&) noexcept = default;

namespace {

// The cache's Work, made on first use (empty, as a fresh cache's state was).
MoeCache::Work& work_of(MoeCache& cache) {
  if (!cache.work) cache.work = std::make_unique<MoeCache::Work>();
  return *cache.work;
}

// Mean (token, expert) pairs per active expert up to which the experts are shared out among
// the threads, each computed on one (moe/expert_schedule.hpp): at ffn compare's sizes sharing
// trains faster than splitting each expert's small products (docs/experiment.md).
constexpr int64_t kTokensPerExpertForSharing = 256;

BlockConfig shared_config(const MoeConfig& c) {
  return BlockConfig{c.expert.variant, c.d_model(), c.shared_hidden, c.expert.bias, 0.0};
}

// m as rows × cols, reallocated (zeroed) only when its shape changes.
void shape(Matrix& m, int64_t rows, int64_t cols) {
  if (m.rows() != rows || m.cols() != cols) m = Matrix(rows, cols);
}

MatrixView rows_of(Matrix& m, int64_t first, int64_t n) { return {m.data() + first * m.cols(), n, m.cols(), m.cols()}; }

void require_shape(const Matrix& m, int64_t rows, int64_t cols, const std::string& what) {
  if (m.rows() != rows || m.cols() != cols)
    throw Error(what + " is [" + std::to_string(m.rows()) + "][" + std::to_string(m.cols()) + "], expected [" +
                std::to_string(rows) + "][" + std::to_string(cols) + "]");
}

// dl [E] of one token from dw [k] (the gradient of its k routing weights) through the
// config's rule; logits [E] as saved.
void routing_weights_backward(const MoeConfig& c, const float* logits, const int32_t* experts, const float* weights,
                              const double* dw, double* dl) {
  const int64_t E = c.experts, k = c.top_k;
  std::fill(dl, dl + E, 0.0);
  double wdw = 0;  // Σ_j w_j·dw_j
  for (int64_t j = 0; j < k; ++j) wdw += double(weights[j]) * dw[j];
  switch (c.scoring) {
    case RouterScoring::softmax:
      if (!c.normalize_top_k) {
        // w = r·p (softmax over all E): dl_e = w_e·dw_e·[e chosen] − p_e·Σ_j w_j·dw_j.
        const double top = *std::max_element(logits, logits + E);
        double sum = 0;
        for (int64_t e = 0; e < E; ++e) sum += std::exp(double(logits[e]) - top);
        for (int64_t e = 0; e < E; ++e) dl[e] = -std::exp(double(logits[e]) - top) / sum * wdw;
        for (int64_t j = 0; j < k; ++j) dl[experts[j]] += double(weights[j]) * dw[j];
        return;
      }
      [[fallthrough]];  // renormalised: a softmax over the k chosen logits, as softmax_top_k
    case RouterScoring::softmax_top_k:
      // w_j = r·q_j, q the softmax of the k chosen: dl_j = r·q_j·(dw_j − Σ q·dw) = w_j·(dw_j − wdw/r).
      for (int64_t j = 0; j < k; ++j) dl[experts[j]] = double(weights[j]) * (dw[j] - wdw / c.routed_scaling);
      return;
    case RouterScoring::sigmoid:
    case RouterScoring::sigmoid_top_k: {
      const double r = c.routed_scaling;
      // Z = Σ_chosen s (+ 1e-20 for DeepSeek's sigmoid); Σ_j dw_j·s_j
      double z = c.scoring == RouterScoring::sigmoid ? 1e-20 : 0.0, sdw = 0;
      std::vector<double> s(static_cast<size_t>(k));
      for (int64_t j = 0; j < k; ++j) {
        s[j] = 1.0 / (1.0 + std::exp(-double(logits[experts[j]])));
        z += s[j];
        sdw += dw[j] * s[j];
      }
      for (int64_t j = 0; j < k; ++j) {
        const double ds = c.normalize_top_k ? r * (dw[j] / z - sdw / (z * z)) : r * dw[j];
        dl[experts[j]] = ds * s[j] * (1.0 - s[j]);
      }
      return;
    }
  }
}

}  // namespace

namespace {
// Llama 4's weights on the experts' inputs have no training form here.
void require_trainable(const MoeConfig& c) {
  if (c.weight_input)
    throw Error("weight_input (Llama 4's routing weight on the experts' inputs) is inference-only: "
                "TrainableMoe does not differentiate it");
}
}  // namespace

TrainableMoe TrainableMoe::random(const MoeConfig& config, uint64_t seed) {
  ffn::validate(config);
  require_trainable(config);
  const int64_t E = config.experts, D = config.d_model();
  TrainableMoe m;
  m.config = config;
  const double bound = 1.0 / std::sqrt(double(D));  // nn.Linear(D, ·)
  m.router.weight = Matrix(E, D);
  fill_uniform(m.router.weight, seed, 201, bound);
  if (config.router_bias) {
    m.router.bias = Matrix(1, E);
    fill_uniform(m.router.bias, seed, 202, bound);
  }
  if (config.choice_bias) m.router.choice_bias = Matrix(1, E);
  if (config.shared_gate) {
    m.router.shared_gate = Matrix(1, D);
    fill_uniform(m.router.shared_gate, seed, 203, bound);
  }
  for (int64_t e = 0; e < E; ++e) m.experts.push_back(Block::random(config.expert, splitmix64(seed + 300 + uint64_t(e))));
  if (config.shared_hidden > 0) m.shared = Block::random(shared_config(config), splitmix64(seed + 299));
  return m;
}

void TrainableMoe::validate() const { (void)to_inference(); }

MoeBlock TrainableMoe::to_inference(ThreadPool* pool) const {
  MoeRouter r{router.weight.clone(), router.bias.clone(), router.choice_bias.clone(), router.shared_gate.clone()};
  const MatrixTypes f32{WeightType::f32, WeightType::f32, WeightType::f32};
  return MoeBlock::from_blocks(config, std::move(r), experts, shared, f32, pool);
}

MoeGradients zero_gradients(const MoeConfig& c) {
  validate(c);
  MoeGradients g;
  g.router = Matrix(c.experts, c.d_model());
  if (c.router_bias) g.router_bias = Matrix(1, c.experts);
  if (c.shared_gate) g.shared_gate = Matrix(1, c.d_model());
  for (int64_t e = 0; e < c.experts; ++e) g.experts.push_back(zero_gradients(c.expert));
  if (c.shared_hidden > 0) g.shared = zero_gradients(shared_config(c));
  return g;
}

double forward_train(const TrainableMoe& moe, ConstMatrixView x, MatrixView y, MoeCache& cache, ThreadPool* pool_arg) {
  const MoeConfig& c = moe.config;
  const int64_t D = c.d_model(), E = c.experts, k = c.top_k, T = x.rows;
  require_trainable(c);
  views::check_forward_views(x, y, D);
  if (static_cast<int64_t>(moe.experts.size()) != E)
    throw Error("the block has " + std::to_string(moe.experts.size()) + " experts, the configuration says " +
                std::to_string(E));
  if ((c.shared_hidden > 0) != moe.shared.has_value())
    throw Error(c.shared_hidden > 0 ? "the configuration has shared experts but none were given"
                                    : "shared experts given, but the configuration has none");
  ThreadPool& pool = pool_arg ? *pool_arg : default_thread_pool();
  MoeCache::Work& state = work_of(cache);
  cache.tokens = T;
  shape(cache.logits, T, E);
  cache.routing = route(c, moe.router, x, cache.logits.view(), &pool);
  const Routing& r = cache.routing;

  state.pairs = sort_by_expert(r, E);
  const ExpertPairs& pairs = state.pairs;

  shape(state.inputs, T * k, D);
  shape(state.outputs, T * k, D);
  for (int64_t i = 0; i < T * k; ++i)
    std::memcpy(state.inputs.row(i), x.data + pairs.pair_token[i] * x.stride, static_cast<size_t>(D) * sizeof(float));
  state.expert_cache.resize(static_cast<size_t>(E));
  run_experts(pool, active_experts(state.pairs), T * k, kTokensPerExpertForSharing, [&](int32_t e, ThreadPool& on) {
    const int64_t first = state.pairs.offsets[e], n = state.pairs.offsets[e + 1] - first;
    forward_train(moe.experts[e], rows_of(state.inputs, first, n), rows_of(state.outputs, first, n),
                  state.expert_cache[e], false, &on);
  });

  if (moe.shared) {
    shape(state.shared_out, T, D);
    forward_train(*moe.shared, x, state.shared_out.view(), state.shared_cache, false, &pool);
    state.shared_gate.assign(static_cast<size_t>(T), 1.0f);
  }
  combine_expert_outputs(c, moe.router, x, r, pairs, state.outputs.view(),
                         moe.shared ? ConstMatrixView(state.shared_out.view()) : ConstMatrixView{}, y, pool,
                         moe.shared ? state.shared_gate.data() : nullptr);

  // The balance loss E·Σ_e f_e·P_e (P from the softmax of the logits, summed in token order).
  std::vector<double> P(static_cast<size_t>(E), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const float* l = cache.logits.row(t);
    const double top = *std::max_element(l, l + E);
    double sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += std::exp(double(l[e]) - top);
    for (int64_t e = 0; e < E; ++e) P[e] += std::exp(double(l[e]) - top) / sum;
  }
  double balance = 0;
  for (int64_t e = 0; e < E && T > 0; ++e)
    balance += double(state.pairs.offsets[e + 1] - state.pairs.offsets[e]) / double(T) * (P[e] / double(T));
  cache.balance_loss = double(E) * balance;
  return cache.balance_loss;
}

void backward(const TrainableMoe& moe, ConstMatrixView x, MoeCache& cache, ConstMatrixView dy, MatrixView dx,
              MoeGradients& g, double balance, ThreadPool* pool_arg) {
  const MoeConfig& c = moe.config;
  const int64_t D = c.d_model(), E = c.experts, k = c.top_k, T = x.rows;
  if (cache.tokens != T || cache.logits.rows() != T)
    throw Error("the cache holds a forward of " + std::to_string(cache.tokens) + " tokens, x has " +
                std::to_string(T));
  if (x.cols != D || dy.rows != T || dy.cols != D || (dx.data && (dx.rows != T || dx.cols != D)))
    throw Error("x, dy and dx must be [" + std::to_string(T) + "][" + std::to_string(D) + "]");
  if (!std::isfinite(balance) || balance < 0)
    throw Error("balance-loss weight = " + std::to_string(balance) + ": must be finite and ≥ 0");
  require_shape(g.router, E, D, "the router's gradient");
  if (c.router_bias) require_shape(g.router_bias, 1, E, "the router bias's gradient");
  if (c.shared_gate) require_shape(g.shared_gate, 1, D, "the shared gate's gradient");
  if (static_cast<int64_t>(g.experts.size()) != E || g.shared.has_value() != moe.shared.has_value())
    throw Error("the gradients hold " + std::to_string(g.experts.size()) + " experts" +
                (g.shared ? " and shared experts" : "") + "; the block " + std::to_string(E) +
                (moe.shared ? " and shared experts" : ""));
  ThreadPool& pool = pool_arg ? *pool_arg : default_thread_pool();
  MoeCache::Work& state = work_of(cache);
  const Routing& r = cache.routing;

  // Each pair's upstream gradient w·dy_t, and each weight's gradient dy_t·out (in double).
  MoeCache::Work::Scratch& scratch = state.scratch;  // every element used is written before it is read
  shape(scratch.dy_pairs, T * k, D);
  shape(scratch.dx_pairs, T * k, D);
  shape(scratch.dlogits, T, E);
  scratch.dw.resize(static_cast<size_t>(T * k));
  Matrix &dy_pairs = scratch.dy_pairs, &dx_pairs = scratch.dx_pairs, &dl = scratch.dlogits;
  std::vector<double>& dw = scratch.dw;
  pool.run([&](int ith, int nth) {
    const auto [t0, t1] = split_range(T, ith, nth);
    std::vector<double> dl_t(static_cast<size_t>(E));
    for (int64_t t = t0; t < t1; ++t) {
      const float* dyt = dy.data + t * dy.stride;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t row = state.pairs.row_of[t * k + j];
        const float w = r.weights[t * k + j];
        const float* o = state.outputs.row(row);
        float* d = dy_pairs.row(row);
        double dot = 0;
        for (int64_t i = 0; i < D; ++i) {
          d[i] = w * dyt[i];
          dot += double(dyt[i]) * double(o[i]);
        }
        dw[t * k + j] = dot;
      }
      const float* l = cache.logits.row(t);
      routing_weights_backward(c, l, r.experts.data() + t * k, r.weights.data() + t * k, dw.data() + t * k,
                               dl_t.data());
      if (balance > 0) {
        // α·p_te·(c_e − Σ p·c)/T with c_e = E·f_e.
        const double top = *std::max_element(l, l + E);
        double sum = 0, pc = 0;
        std::vector<double> p(static_cast<size_t>(E));
        for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(double(l[e]) - top));
        for (int64_t e = 0; e < E; ++e) {
          p[e] /= sum;
          pc += p[e] * double(E) * double(state.pairs.offsets[e + 1] - state.pairs.offsets[e]) / double(T);
        }
        for (int64_t e = 0; e < E; ++e) {
          const double ce = double(E) * double(state.pairs.offsets[e + 1] - state.pairs.offsets[e]) / double(T);
          dl_t[e] += balance * p[e] * (ce - pc) / double(T);
        }
      }
      float* dlr = dl.row(t);
      for (int64_t e = 0; e < E; ++e) dlr[e] = static_cast<float>(dl_t[e]);
    }
  });

  // The experts, each its tokens as one batch.
  run_experts(pool, active_experts(state.pairs), T * k, kTokensPerExpertForSharing, [&](int32_t e, ThreadPool& on) {
    const int64_t first = state.pairs.offsets[e], n = state.pairs.offsets[e + 1] - first;
    backward(moe.experts[e], rows_of(state.inputs, first, n), state.expert_cache[e], rows_of(dy_pairs, first, n),
             dx.data ? rows_of(dx_pairs, first, n) : MatrixView{}, g.experts[e], &on);
  });

  // The router: dW += dlᵀ·x, db += Σ_t dl (token order), dx_router = dl·W.
  shape(scratch.dx_router, dx.data ? T : 0, D);
  Matrix& dx_router = scratch.dx_router;
  train_detail::linear_backward(pool, x, moe.router.weight.view(), dl.view(), dx.data ? dx_router.view() : MatrixView{},
                                g.router.view());
  if (c.router_bias)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e) g.router_bias.data()[e] += dl.row(t)[e];

  // The shared experts: upstream σ(z)·dy, and the gate's own gradient.
  Matrix &dx_shared = scratch.dx_shared, &ds = scratch.dshared;
  std::vector<float>& dz = scratch.dz;
  if (moe.shared) {
    shape(ds, T, D);
    if (c.shared_gate) dz.resize(static_cast<size_t>(T));
    pool.run([&](int ith, int nth) {
      const auto [t0, t1] = split_range(T, ith, nth);
      for (int64_t t = t0; t < t1; ++t) {
        const float gate = state.shared_gate[t];
        const float* dyt = dy.data + t * dy.stride;
        float* dst = ds.row(t);
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) {
          dst[d] = gate * dyt[d];
          dot += double(dyt[d]) * double(state.shared_out.row(t)[d]);
        }
        if (c.shared_gate) dz[t] = static_cast<float>(dot * double(gate) * (1.0 - double(gate)));
      }
    });
    if (dx.data) shape(dx_shared, T, D);
    backward(*moe.shared, x, state.shared_cache, ds.view(), dx.data ? dx_shared.view() : MatrixView{}, *g.shared,
             &pool);
    if (c.shared_gate)
      for (int64_t t = 0; t < T; ++t) {
        const float* xt = x.data + t * x.stride;
        for (int64_t d = 0; d < D; ++d) g.shared_gate.data()[d] += dz[t] * xt[d];
      }
  }

  if (!dx.data) return;
  const kernels::KernelTable& kt = kernels::active_kernels();
  // dx_t: its experts' dx in increasing expert index, then the router's, the shared
  // experts' and the shared gate's.
  pool.run([&](int ith, int nth) {
    const auto [t0, t1] = split_range(T, ith, nth);
    std::vector<int64_t> rows(static_cast<size_t>(k));
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t j = 0; j < k; ++j) rows[j] = state.pairs.row_of[t * k + j];
      std::sort(rows.begin(), rows.end());
      float* dxt = dx.data + t * dx.stride;
      std::fill(dxt, dxt + D, 0.0f);
      for (int64_t row : rows) {
        const float* p = dx_pairs.row(row);
        for (int64_t d = 0; d < D; ++d) dxt[d] += p[d];
      }
      for (int64_t d = 0; d < D; ++d) dxt[d] += dx_router.row(t)[d];
      if (!moe.shared) continue;
      for (int64_t d = 0; d < D; ++d) dxt[d] += dx_shared.row(t)[d];
      // dx_t += dz_t · w_gate, one fma an element (rows_axpy's step: the bits of the scalar
      // std::fma loop, which generic code compiled to a libm call an element).
      if (c.shared_gate) {
        const int32_t gate_row = 0;
        kt.rows_axpy(WeightType::f32, 1, 1, &gate_row, &dz[t], 1, D,
                     reinterpret_cast<const std::byte*>(moe.router.shared_gate.data()), D * int64_t(sizeof(float)), dxt,
                     D, {});
      }
    }
  });
}

}  // namespace ffn
