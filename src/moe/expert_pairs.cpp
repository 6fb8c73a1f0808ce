// The counting sort of a routing's pairs by expert, and the weighted sum of the experts'
// outputs (contracts in expert_pairs.hpp).
#include "moe/expert_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/kernels.hpp"

namespace ffn {

ExpertPairs sort_by_expert(const Routing& r, int64_t E) {
  const int64_t T = r.tokens, k = r.k;
  ExpertPairs s;
  s.offsets.assign(static_cast<size_t>(E + 1), 0);
  for (int32_t e : r.experts) ++s.offsets[static_cast<size_t>(e) + 1];
  for (int64_t e = 0; e < E; ++e) s.offsets[e + 1] += s.offsets[e];
  std::vector<int64_t> cursor(s.offsets.begin(), s.offsets.end() - 1);
  s.pair_token.resize(static_cast<size_t>(T * k));
  s.row_of.resize(static_cast<size_t>(T * k));
  s.pair_slot.resize(static_cast<size_t>(T * k));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = cursor[static_cast<size_t>(r.experts[t * k + j])]++;
      s.pair_token[at] = t;
      s.row_of[t * k + j] = at;
      s.pair_slot[at] = t * k + j;
    }
  return s;
}

void gather_expert_inputs(const MoeConfig& c, ConstMatrixView x, const Routing& r, const ExpertPairs& s, int32_t e,
                          MatrixView in) {
  const int64_t first = s.offsets[e], n = s.offsets[e + 1] - first, D = c.d_model();
  for (int64_t i = 0; i < n; ++i) {
    const float* xt = x.data + s.pair_token[first + i] * x.stride;
    float* row = in.data + i * in.stride;
    if (!c.weight_input) {
      std::memcpy(row, xt, static_cast<size_t>(D) * sizeof(float));
      continue;
    }
    const float w = r.weights[s.pair_slot[first + i]];
    for (int64_t d = 0; d < D; ++d) row[d] = w * xt[d];
  }
}

std::vector<int32_t> active_experts(const ExpertPairs& s) {
  std::vector<int32_t> active;
  for (size_t e = 0; e + 1 < s.offsets.size(); ++e)
    if (s.offsets[e + 1] > s.offsets[e]) active.push_back(static_cast<int32_t>(e));
  return active;
}

void combine_expert_outputs(const MoeConfig& c, const MoeRouter& router, ConstMatrixView x, const Routing& r,
                            const ExpertPairs& s, ConstMatrixView out, ConstMatrixView shared, MatrixView y,
                            ThreadPool& pool, float* shared_gates) {
  const kernels::KernelTable& kt = kernels::active_kernels();
  const int64_t T = x.rows, D = c.d_model(), k = c.top_k;
  // Each token's slots as rows of `out` in increasing expert index (their sorted position)
  // with their weights: the list rows_axpy sums in order.
  std::vector<int32_t> rows(static_cast<size_t>(T * k));
  std::vector<float> weights(static_cast<size_t>(T * k));
  std::vector<std::pair<int64_t, float>> slots(static_cast<size_t>(k));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < k; ++j) slots[j] = {s.row_of[t * k + j], c.weight_input ? 1.0f : r.weights[t * k + j]};
    std::sort(slots.begin(), slots.end());
    for (int64_t j = 0; j < k; ++j) {
      rows[t * k + j] = static_cast<int32_t>(slots[j].first);
      weights[t * k + j] = slots[j].second;
    }
  }
  const auto* out_bytes = reinterpret_cast<const std::byte*>(out.data);
  const auto* shared_bytes = reinterpret_cast<const std::byte*>(shared.data);
  pool.run([&](int ith, int nth) {
    // Tokens shared out among the threads; with fewer tokens than threads (decode) every
    // thread takes a share of each token's columns instead — a chain's bits do not depend on
    // the columns a caller cuts it into (rows_axpy's contract).
    const bool by_columns = T < nth;
    const auto [t0, t1] = by_columns ? std::pair<int64_t, int64_t>{0, T} : split_range(T, ith, nth);
    const auto [c0, c1] = by_columns ? split_range(D, ith, nth, 16) : std::pair<int64_t, int64_t>{0, D};
    if (c1 <= c0) return;
    const int64_t col_bytes = c0 * int64_t(sizeof(float));
    for (int64_t t = t0; t < t1; ++t) {
      float* yt = y.data + t * y.stride;
      std::fill(yt + c0, yt + c1, 0.0f);
      kt.rows_axpy(WeightType::f32, 1, k, rows.data() + t * k, weights.data() + t * k, k, c1 - c0,
                   out_bytes + col_bytes, out.stride * int64_t(sizeof(float)), yt + c0, y.stride, {});
      if (!shared.data) continue;
      float gate = 1.0f;
      if (c.shared_gate) {
        const float* xt = x.data + t * x.stride;
        float z = 0.0f;
        for (int64_t d = 0; d < D; ++d) z = std::fma(router.shared_gate.data()[d], xt[d], z);
        gate = 1.0f / (1.0f + std::exp(-z));
      }
      if (shared_gates && c0 == 0) shared_gates[t] = gate;
      const int32_t shared_row = static_cast<int32_t>(t);
      kt.rows_axpy(WeightType::f32, 1, 1, &shared_row, &gate, 1, c1 - c0, shared_bytes + col_bytes,
                   shared.stride * int64_t(sizeof(float)), yt + c0, y.stride, {});
    }
  });
}

}  // namespace ffn
