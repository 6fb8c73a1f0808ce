// The gate-first forward of an InferenceBlock (Panels::gate_first): every gate value of a
// token before any of its up values, for the two things that need them all —
//   Gemma 3n's Gaussian top-k (BlockConfig::gate_sparsity): per token, g ← relu(g − (mean(g)
//     + std(g)·Φ⁻¹(s))) over its H gate values before the activation;
//   activation-sparse decode (SparseDecode): a channel whose activated gate value a_j is at
//     most the threshold in magnitude is skipped — its up row and down column never read.
//
//   1. a = act(gate products (+ b_g)) [T][H] (2-matrix blocks: act(up products (+ b_u)),
//      which is h itself), the gate panels swept across the pool as in the fused forward.
//   2. sparse (enabled, T ≤ max_tokens): the channels some token keeps, in ascending order,
//      a fixed group of channels a thread (Panels::down_group) and for each group: u of its
//      channels by rows_dot over their up rows (q8_0 rows by rows_dot_q8_0 against x in q8_0,
//      the bits the dense q8_0 panels give), h = a ⊙ u where the token keeps the channel,
//      else 0, and the group's sum Σ_j h_j·down_rows[j] by rows_axpy (one chain over its
//      channels in order); y = the groups' sums added in group order, whatever the threads.
//      (Panels::channel_rows: a channel's up and down rows side by side.)
//      dense (otherwise): up's panels, h = a ⊙ u (0 where the threshold drops the channel),
//      then the fused forward's down stage.
// A token's y depends only on its own x: its kept channels are its own, another token's
// channels in the list add exact zeros to it (h = 0: rows_axpy's contract), and every dot
// and chain is fixed by the ISA and the shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "block/bias_rows.hpp"
#include "block/inference_stages.hpp"
#include "block/view_checks.hpp"
#include "ffn/error.hpp"

namespace ffn::inference {
namespace {

// gpt-oss's gated activation multiplies by clamp(u, −7, 7) + 1 where the others take u
// (config.hpp, clamped_swish); the same in the fused activation kernels.
inline float up_factor(Activation act, float u) {
  return act == Activation::clamped_swish ? std::min(std::max(u, -7.0f), 7.0f) + 1.0f : u;
}

// Gemma 3n's Gaussian top-k on one token's gate values g[0 … H) in place: the cutoff
// mean + std·z (z = Φ⁻¹(s), biased std) in double, then g ← max(g − cutoff, 0).
void gaussian_top_k(float* g, int64_t H, double z) {
  double sum = 0;
  for (int64_t j = 0; j < H; ++j) sum += g[j];
  const double mean = sum / double(H);
  double squares = 0;
  for (int64_t j = 0; j < H; ++j) squares += (g[j] - mean) * (g[j] - mean);
  const float cutoff = float(mean + std::sqrt(squares / double(H)) * z);
  for (int64_t j = 0; j < H; ++j) g[j] = std::max(g[j] - cutoff, 0.0f);
}

}  // namespace

// Step 1: a = act(gate (+ b)) [T][H], Gaussian top-k first where the config has one.
void activated_gate(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView a, ThreadPool& p) {
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  const auto& k = kernels::active_kernels();
  const bool gated = c.variant.gated;
  // Gate values a panel: 64 from the gate's (or a 2-matrix block's up) panels; 32 from a
  // fused panel's first half (a block that is not gate-first, asked by hidden_activations).
  const PanelSet& panels = gated && !w.fused ? w.gate : w.first;
  const int64_t units = w.fused ? kW / 2 : kW;
  const float* bias = c.bias ? (gated ? w.gate_bias.data() : w.up_bias.data()) : nullptr;
  const StageInput in = stage_input(k, panels.type, x, Scratch::gate_activations);
  fill_rows(k, in.rows, x, p);
  sweep_panels(p, T, panels.count, panels.panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
    const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
    for (int64_t panel = p0; panel < p1; ++panel) {
      const int64_t j0 = panel * units, nj = std::min(units, H - j0);
      in.kernel->fn(n, D, in.rows.from_token(t0), panels.panel(panel), tile.data, kW);
      if (bias) add_bias_rows(tile.data, kW, n, bias + j0, nj);
      for (int64_t t = 0; t < n; ++t) std::memcpy(a.row(t0 + t) + j0, tile.row(t), size_t(nj) * sizeof(float));
    }
  });
  const double z = c.gate_sparsity > 0 ? normal_quantile(c.gate_sparsity) : 0.0;
  p.run([&](int ith, int nth) {
    if (c.gate_sparsity > 0) {
      const auto [t0, t1] = split_range(T, ith, nth);
      for (int64_t t = t0; t < t1; ++t) {
        gaussian_top_k(a.row(t), H, z);
        k.f32_activation_rows(c.variant.activation, 1, H, a.row(t), a.stride, a.row(t), a.stride);
      }
    } else {
      const auto [j0, j1] = split_range(H, ith, nth, 16);
      if (j1 > j0)
        k.f32_activation_rows(c.variant.activation, T, j1 - j0, a.data + j0, a.stride, a.data + j0, a.stride);
    }
  });
}

namespace {

// Step 2, sparse: y from the kept channels' up rows and down rows.
void sparse_rest(const InferenceBlock::Panels& w, ConstMatrixView x, ConstMatrixView a, MatrixView y, ThreadPool& p) {
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  const auto& k = kernels::active_kernels();
  const float threshold = w.sparse.threshold;
  // The channels some token keeps, ascending; then u and h of those, [T][n] each.
  auto* lists = reinterpret_cast<int32_t*>(scratch_bytes(Scratch::sparse_lists, (4 + 8 * T) * H + 64));
  int64_t n = 0;
  for (int64_t j = 0; j < H; ++j) {
    bool any = false;
    for (int64_t t = 0; t < T && !any; ++t) any = sparse_decode_keeps(a.row(t)[j], threshold);
    if (any) lists[n++] = int32_t(j);
  }
  float* const u = reinterpret_cast<float*>(lists + H);
  float* const h = u + T * H;
  const InferenceBlock::Panels::ChannelRows& rows = w.channel_rows;
  // q8_0 up rows take x in q8_0 for the integer dot, as the dense q8_0 panels take it (a few
  // KB: this thread).
  const bool q8 = c.variant.gated && rows.up_type == WeightType::q8_0;
  kernels::ActivationRows xq;
  if (q8) {
    xq = activation_rows(WeightType::q8_0,
                         scratch_bytes(Scratch::x_activations, activation_bytes(WeightType::q8_0, T, D)), T, D);
    quantize_activations(k, xq, 0, T, 0, D, x.data, x.stride);
  }
  const Activation act = c.variant.activation;
  // h of the listed channels [i0, i1): a ⊙ u where the token keeps the channel, else 0.
  auto hidden = [&](int64_t i0, int64_t i1) {
    for (int64_t t = 0; t < T; ++t) {
      const float* at = a.row(t);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t j = lists[i];
        float v = 0.0f;
        if (sparse_decode_keeps(at[j], threshold))
          v = c.variant.gated ? at[j] * up_factor(act, c.bias ? u[t * H + i] + w.up_bias.data()[j] : u[t * H + i])
                              : at[j];
        h[t * H + i] = v;
      }
    }
  };
  // The group's listed channels [i0, i0 + m) that down reads with a down threshold: those
  // some token keeps by |h| > down_threshold (NaN kept), moved to the front of the group's
  // list with their h (0 for a token that drops the channel: an exact zero in its chain);
  // returns their count. In place: the group's own stretch of lists and h.
  const float down_threshold = c.variant.gated ? w.sparse.down_threshold : 0.0f;
  auto drop_small_hidden = [&](int64_t i0, int64_t m) {
    int64_t kept_for_down = i0;
    for (int64_t i = i0; i < i0 + m; ++i) {
      bool any = false;
      for (int64_t t = 0; t < T; ++t) {
        float& v = h[t * H + i];
        const bool keep = sparse_decode_keeps(v, down_threshold);
        if (!keep) v = 0.0f;
        any = any || keep;
      }
      if (!any) continue;
      lists[kept_for_down] = lists[i];
      for (int64_t t = 0; t < T; ++t) h[t * H + kept_for_down] = h[t * H + i];
      ++kept_for_down;
    }
    return kept_for_down - i0;
  };
  // A group of channels (Panels::down_group) a step, whole groups a thread: its kept
  // channels' u by rows_dot over their up rows, their h, then its share of y — one chain in
  // channel order from +0 into the group's own [T][D] by rows_axpy over their down rows, the
  // up and down rows of a channel neighbours in memory. Then, the columns shared across the
  // pool, y = the groups' sums added in group order. A group with no kept channel adds nothing
  // (a sum that would be +0; chains never end at −0).
  const int64_t groups = w.down_groups(), stride = rows.stride();
  std::vector<int64_t> first(size_t(groups + 1), n);  // group g's kept: lists[first[g], first[g + 1])
  for (int64_t g = 0, i = 0; g < groups; ++g) {
    first[size_t(g)] = i;
    while (i < n && lists[i] < (g + 1) * w.down_group) ++i;
  }
  float* const sums = reinterpret_cast<float*>(scratch_bytes(Scratch::sparse_group_sums, groups * T * D * 4));
  auto kept_in = [&](int64_t g) { return first[size_t(g) + 1] - first[size_t(g)]; };
  // Each call's last pass prefetches the rows read next (kernels::RowsAhead): after a group's
  // up rows its down rows (with a down threshold, the first candidates, some of which it may
  // drop), after its down rows the first rows of the thread's next group with kept channels
  // (up's; a 2-matrix block's down). Without it every call's first pass waited on memory.
  run_in_guided_chunks(p, groups, groups, 1, [&](int64_t g0, int64_t g1) {
    // The first group from g on, before g1, with kept channels (g1: none).
    auto with_kept = [&](int64_t g) {
      while (g < g1 && kept_in(g) == 0) ++g;
      return g;
    };
    for (int64_t g = with_kept(g0); g < g1;) {
      const int64_t next = with_kept(g + 1);
      const int64_t i0 = first[size_t(g)], m = kept_in(g);
      const kernels::RowsAhead down_rows{lists + i0, m, rows.down()};
      const kernels::RowsAhead next_group{lists + first[size_t(next)], next < g1 ? kept_in(next) : 0,
                                          c.variant.gated ? rows.up() : rows.down()};
      if (q8)
        k.rows_dot_q8_0(T, m, lists + i0, D, xq, rows.up(), stride, u + i0, H, down_rows);
      else if (c.variant.gated)
        k.rows_dot(rows.up_type, T, m, lists + i0, D, x.data, x.stride, rows.up(), stride, u + i0, H, down_rows);
      hidden(i0, i0 + m);
      const int64_t md = down_threshold > 0 ? drop_small_hidden(i0, m) : m;
      float* sum = sums + g * T * D;
      std::fill(sum, sum + T * D, 0.0f);
      k.rows_axpy(rows.down_type, T, md, lists + i0, h + i0, H, D, rows.down(), stride, sum, D, next_group);
      g = next;
    }
  });
  p.run([&](int ith, int nth) {
    const auto [c0, c1] = split_range(D, ith, nth, 16);
    for (int64_t t = 0; t < T; ++t) {
      float* yt = y.row(t);
      std::fill(yt + c0, yt + c1, 0.0f);
      for (int64_t g = 0; g < groups; ++g) {
        if (kept_in(g) == 0) continue;
        const float* sum = sums + (g * T + t) * D;
        for (int64_t col = c0; col < c1; ++col) yt[col] += sum[col];
      }
    }
    if (c.bias && c1 > c0) add_bias_rows(y.data + c0, y.stride, T, w.down_bias.data() + c0, c1 - c0);
  });
}

}  // namespace

// h = a ⊙ u [T][H] from up's panels (2-matrix blocks: h = a), 0 for a channel the token
// drops: |a| ≤ threshold (threshold < 0: none), or, gated, |h| ≤ down_threshold (0: none).
void hidden_from_gate(const InferenceBlock::Panels& w, ConstMatrixView x, ConstMatrixView a, MatrixView h,
                      float threshold, float down_threshold, ThreadPool& p) {
  const BlockConfig& c = w.config;
  const int64_t D = c.d_model, H = c.hidden, T = x.rows;
  const auto& k = kernels::active_kernels();
  if (c.variant.gated) {
    const Activation act = c.variant.activation;
    const StageInput in = stage_input(k, w.first.type, x, Scratch::x_activations);
    fill_rows(k, in.rows, x, p);
    sweep_panels(p, T, w.first.count, w.first.panel_bytes, [&](int64_t t0, int64_t n, int64_t p0, int64_t p1) {
      const MatrixView tile = scratch_matrix(Scratch::tile, std::min(T, kTokenBlock), kW);
      for (int64_t panel = p0; panel < p1; ++panel) {
        const int64_t j0 = panel * kW, nj = std::min(kW, H - j0);
        in.kernel->fn(n, D, in.rows.from_token(t0), w.first.panel(panel), tile.data, kW);
        if (c.bias) add_bias_rows(tile.data, kW, n, w.up_bias.data() + j0, nj);
        for (int64_t t = t0; t < t0 + n; ++t) {
          const float* at = a.row(t) + j0;
          const float* ut = tile.row(t - t0);
          float* ht = h.row(t) + j0;
          for (int64_t i = 0; i < nj; ++i) {
            const float v = sparse_decode_keeps(at[i], threshold) ? at[i] * up_factor(act, ut[i]) : 0.0f;
            ht[i] = down_threshold > 0 && !sparse_decode_keeps(v, down_threshold) ? 0.0f : v;
          }
        }
      }
    });
  } else {
    p.run([&](int ith, int nth) {
      const auto [t0, t1] = split_range(T, ith, nth);
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t j = 0; j < H; ++j) h.row(t)[j] = sparse_decode_keeps(a.row(t)[j], threshold) ? a.row(t)[j] : 0.0f;
    });
  }
}

namespace {

// Step 2, dense: h by up's panels (0 for a channel the thresholds drop), the down stage.
void dense_rest(const InferenceBlock::Panels& w, ConstMatrixView x, ConstMatrixView a, MatrixView y, ThreadPool& p) {
  const auto& k = kernels::active_kernels();
  const float threshold = w.sparse.enabled ? w.sparse.threshold : -1.0f;  // -1: keep every channel
  const float down_threshold = w.sparse.enabled ? w.sparse.down_threshold : 0.0f;
  const MatrixView h = scratch_matrix(Scratch::hidden, x.rows, w.config.hidden);
  hidden_from_gate(w, x, a, h, threshold, down_threshold, p);
  const StageInput h_down = stage_input(k, w.down.type, h, Scratch::hidden_activations);
  fill_rows(k, h_down.rows, h, p);
  down_stage(w, h_down, x.rows, y, p);
}

// The rows `tokens` of m, gathered.
Matrix gather_rows(ConstMatrixView m, const std::vector<int64_t>& tokens) {
  Matrix out(int64_t(tokens.size()), m.cols);
  for (size_t i = 0; i < tokens.size(); ++i)
    std::memcpy(out.row(int64_t(i)), m.row(tokens[i]), size_t(m.cols) * sizeof(float));
  return out;
}

}  // namespace

void forward_gate_first(const InferenceBlock::Panels& w, ConstMatrixView x, MatrixView y, ThreadPool& p) {
  const int64_t T = x.rows, H = w.config.hidden;
  const MatrixView a = scratch_matrix(Scratch::gate_values, T, H);
  activated_gate(w, x, a, p);
  if (!w.sparse.enabled || T > w.sparse.max_tokens) return dense_rest(w, x, a, y, p);
  // Each token by its own kept channels: sparse up to Panels::sparse_kept_limit, dense above.
  std::vector<int64_t> sparse_tokens, dense_tokens;
  for (int64_t t = 0; t < T; ++t) {
    int64_t kept_count = 0;
    for (int64_t j = 0; j < H; ++j) kept_count += sparse_decode_keeps(a.row(t)[j], w.sparse.threshold);
    (kept_count <= w.sparse_kept_limit ? sparse_tokens : dense_tokens).push_back(t);
  }
  if (dense_tokens.empty()) return sparse_rest(w, x, a, y, p);
  if (sparse_tokens.empty()) return dense_rest(w, x, a, y, p);
  for (const auto* group : {&sparse_tokens, &dense_tokens}) {
    const Matrix xg = gather_rows(x, *group), ag = gather_rows(a, *group);
    Matrix yg(xg.rows(), y.cols);
    (group == &sparse_tokens ? sparse_rest : dense_rest)(w, xg.view(), ag.view(), yg.view(), p);
    for (size_t i = 0; i < group->size(); ++i)
      std::memcpy(y.row((*group)[i]), yg.row(int64_t(i)), size_t(y.cols) * sizeof(float));
  }
}

}  // namespace ffn::inference

namespace ffn {

namespace {

// The checks hidden_activations and hidden_values share: x [T][D], out [T][H] not over x.
void check_hidden_views(const char* what, const char* name, const BlockConfig& c, ConstMatrixView x, MatrixView out) {
  views::check_view("input x", x, c.d_model);
  if (out.rows != x.rows || out.cols != c.hidden)
    throw Error(std::string(what) + ": " + name + " is [" + std::to_string(out.rows) + ", " + std::to_string(out.cols) +
                "]; it must be [T, H] = [" + std::to_string(x.rows) + ", " + std::to_string(c.hidden) + "]");
  if (views::overlap(x, out)) throw Error(std::string(what) + ": " + name + " overlaps x");
}

}  // namespace

void InferenceBlock::hidden_activations(ConstMatrixView x, MatrixView a, ThreadPool* pool) const {
  check_hidden_views("hidden_activations", "a", panels_->config, x, a);
  if (x.rows == 0) return;
  inference::activated_gate(*panels_, x, a, pool ? *pool : default_thread_pool());
}

void InferenceBlock::hidden_values(ConstMatrixView x, MatrixView h, ThreadPool* pool) const {
  const Panels& w = *panels_;
  check_hidden_views("hidden_values", "h", w.config, x, h);
  const int64_t T = x.rows;
  if (T == 0) return;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (w.gate_first()) {  // the gate values, then up's own panels: no threshold
    const MatrixView a = scratch_matrix(Scratch::gate_values, T, w.config.hidden);
    inference::activated_gate(w, x, a, p);
    inference::hidden_from_gate(w, x, a, h, -1.0f, 0.0f, p);
    return;
  }
  // The fused forward in the buffer the forward uses, whose first stage leaves h in f32 (its
  // down stage's y is discarded).
  Matrix y(T, w.config.d_model);
  const inference::DenseBatch b =
      inference::dense_batch(w, x, y.view(), scratch_bytes(Scratch::dense_forward, inference::dense_batch_bytes(w, T)));
  inference::forward_dense_batches(&b, 1, p);
  for (int64_t t = 0; t < T; ++t) std::memcpy(h.row(t), b.h.row(t), size_t(w.config.hidden) * sizeof(float));
}

}  // namespace ffn
