// The MoE router: logits in f32, then the family's choice of k experts and their weights
// (ffn/moe.hpp states the rules and the contract).
//
// Logits come from f32_gemm_nt (never the packed variant, whose results differ: one kernel
// whatever T is, so a token's logits do not depend on its batch), tokens split across
// threads; each element is a fixed sequence of operations, so the routing is bit-identical
// for any thread count. Ties: candidates are ordered by (score desc, index asc).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ffn/error.hpp"
#include "ffn/moe.hpp"
#include "kernels/kernels.hpp"
#include "parallel/scratch.hpp"

namespace ffn {
namespace {

void check_router(const MoeConfig& c, const MoeRouter& r) {
  const int64_t E = c.experts, D = c.d_model();
  auto shape = [](const Matrix& m) { return "[" + std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "]"; };
  if (r.weight.rows() != E || r.weight.cols() != D)
    throw Error("router weight has shape " + shape(r.weight) + ", expected [" + std::to_string(E) + " experts, " +
                std::to_string(D) + " (d_model)]");
  auto optional_row = [&](const Matrix& m, bool wanted, int64_t n, const char* what) {
    if (wanted ? (m.rows() != 1 || m.cols() != n) : !m.empty())
      throw Error(std::string(what) + " has shape " + shape(m) +
                  (wanted ? ", expected [1, " + std::to_string(n) + "]" : ", but the configuration has none"));
  };
  optional_row(r.bias, c.router_bias, E, "router bias");
  optional_row(r.choice_bias, c.choice_bias, E, "router choice bias (e_score_correction_bias)");
  optional_row(r.shared_gate, c.shared_gate, D, "shared-expert gate");
}

// The k best of n candidates (score desc, index asc), written to out in that order.
void best_k(const float* score, const int32_t* candidates, int64_t n, int64_t k, int32_t* out) {
  std::vector<int32_t> order(candidates, candidates + n);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
  });
  std::copy(order.begin(), order.begin() + k, out);
}

// Group-limited choice: a group's score is the sum of its `best` best scores (1: its
// maximum, DeepSeek-V2; 2: DeepSeek-V3); the scores of experts outside the best top_groups
// groups are set to 0 (as the references mask them), score [E] in place.
void keep_top_groups(const MoeConfig& c, float* score, const int32_t* all, int64_t best) {
  const int64_t G = c.groups, per = c.experts / G;
  std::vector<float> group_score(static_cast<size_t>(G));
  std::vector<int32_t> groups(static_cast<size_t>(G)), top(static_cast<size_t>(best));
  for (int64_t g = 0; g < G; ++g) {
    best_k(score, all + g * per, per, best, top.data());
    float s = 0.0f;
    for (int32_t e : top) s += score[e];
    group_score[g] = s;
  }
  std::iota(groups.begin(), groups.end(), 0);
  std::vector<int32_t> kept(static_cast<size_t>(c.top_groups));
  best_k(group_score.data(), groups.data(), G, c.top_groups, kept.data());
  std::vector<bool> keep(static_cast<size_t>(G), false);
  for (int32_t g : kept) keep[g] = true;
  for (int64_t e = 0; e < c.experts; ++e)
    if (!keep[e / per]) score[e] = 0.0f;
}

// The k weights times routed_scaling (×1 is exact: the families without it are unchanged).
void scale(const MoeConfig& c, float* weights) {
  const float r = static_cast<float>(c.routed_scaling);
  for (int64_t j = 0; j < c.top_k; ++j) weights[j] *= r;
}

// One token's routing from its logits ([E], biases added). Writes k experts and weights.
void route_token(const MoeConfig& c, const MoeRouter& r, float* logits, int32_t* experts, float* weights) {
  const int64_t E = c.experts, k = c.top_k;
  std::vector<int32_t> all(static_cast<size_t>(E));
  std::iota(all.begin(), all.end(), 0);
  switch (c.scoring) {
    case RouterScoring::softmax: {
      const float top = *std::max_element(logits, logits + E);
      float sum = 0.0f;
      for (int64_t e = 0; e < E; ++e) sum += (logits[e] = std::exp(logits[e] - top));
      for (int64_t e = 0; e < E; ++e) logits[e] /= sum;
      if (c.groups > 1) {
        // DeepSeek-V2's group_limited_greedy: a group's score is its best probability;
        // experts outside the best top_groups groups take part with probability 0.
        std::vector<float> choice(logits, logits + E);
        keep_top_groups(c, choice.data(), all.data(), 1);
        best_k(choice.data(), all.data(), E, k, experts);
      } else {
        best_k(logits, all.data(), E, k, experts);
      }
      float chosen = 0.0f;
      for (int64_t j = 0; j < k; ++j) chosen += (weights[j] = logits[experts[j]]);
      if (c.normalize_top_k)
        for (int64_t j = 0; j < k; ++j) weights[j] /= chosen;
      scale(c, weights);
      return;
    }
    case RouterScoring::softmax_top_k: {
      best_k(logits, all.data(), E, k, experts);
      const float top = logits[experts[0]];
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) sum += (weights[j] = std::exp(logits[experts[j]] - top));
      for (int64_t j = 0; j < k; ++j) weights[j] /= sum;
      scale(c, weights);
      return;
    }
    case RouterScoring::sigmoid_top_k: {  // Llama 4: chosen by the logits, weighted σ(logit)
      best_k(logits, all.data(), E, k, experts);
      float chosen = 0.0f;
      for (int64_t j = 0; j < k; ++j) chosen += (weights[j] = 1.0f / (1.0f + std::exp(-logits[experts[j]])));
      if (c.normalize_top_k)
        for (int64_t j = 0; j < k; ++j) weights[j] /= chosen;
      scale(c, weights);
      return;
    }
    case RouterScoring::sigmoid: {
      std::vector<float> choice(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) {
        logits[e] = 1.0f / (1.0f + std::exp(-logits[e]));
        choice[e] = logits[e] + (c.choice_bias ? r.choice_bias.data()[e] : 0.0f);
      }
      // A group's score: the sum of its two best choice scores (DeepSeek-V3's noaux_tc).
      if (c.groups > 1) keep_top_groups(c, choice.data(), all.data(), 2);
      best_k(choice.data(), all.data(), E, k, experts);
      float chosen = 0.0f;
      for (int64_t j = 0; j < k; ++j) chosen += (weights[j] = logits[experts[j]]);
      const float scale = static_cast<float>(c.routed_scaling);
      for (int64_t j = 0; j < k; ++j) weights[j] = (c.normalize_top_k ? weights[j] / (chosen + 1e-20f) : weights[j]) * scale;
      return;
    }
  }
}

}  // namespace

Routing route(const MoeConfig& c, const MoeRouter& r, ConstMatrixView x, ThreadPool* pool) {
  return route(c, r, x, MatrixView{}, pool);
}

Routing route(const MoeConfig& c, const MoeRouter& r, ConstMatrixView x, MatrixView logits_out, ThreadPool* pool) {
  check_router(c, r);
  const int64_t T = x.rows, D = c.d_model(), E = c.experts, k = c.top_k;
  if (x.cols != D)
    throw Error("router input has " + std::to_string(x.cols) + " features, expected d_model " + std::to_string(D));
  if (logits_out.data && (logits_out.rows != T || logits_out.cols != E))
    throw Error("router logits output is [" + std::to_string(logits_out.rows) + "][" + std::to_string(logits_out.cols) +
                "], expected [" + std::to_string(T) + " tokens][" + std::to_string(E) + " experts]");
  Routing out{T, k, std::vector<int32_t>(static_cast<size_t>(T * k)), std::vector<float>(static_cast<size_t>(T * k))};
  if (T == 0) return out;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  const kernels::F32GemmNt gemm = kernels::active_kernels().f32_gemm_nt.fn;
  const MatrixView logits = scratch_matrix(Scratch::moe_logits, T, E);
  std::vector<int64_t> bad(static_cast<size_t>(p.size()), -1);
  p.run([&](int ith, int nth) {
    const auto [t0, t1] = split_range(T, ith, nth);
    if (t1 <= t0) return;
    gemm(t1 - t0, E, D, x.data + t0 * x.stride, x.stride, r.weight.data(), D, logits.data + t0 * E, E);
    for (int64_t t = t0; t < t1; ++t) {
      float* l = logits.data + t * E;
      bool finite = true;
      for (int64_t e = 0; e < E; ++e) {
        if (c.router_bias) l[e] += r.bias.data()[e];
        finite = finite && std::isfinite(l[e]);
      }
      if (!finite) {
        if (bad[ith] < 0) bad[ith] = t;
        continue;
      }
      if (logits_out.data) std::copy(l, l + E, logits_out.data + t * logits_out.stride);
      route_token(c, r, l, out.experts.data() + t * k, out.weights.data() + t * k);
    }
  });
  for (int64_t t : bad)
    if (t >= 0)
      throw Error("router logits of token " + std::to_string(t) +
                  " are not finite (a NaN or Inf in the input or the router weights)");
  return out;
}

}  // namespace ffn
