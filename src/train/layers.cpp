// The language model's layers around the blocks; contracts in layers.hpp.
#include "train/layers.hpp"

#include <cmath>

#include "kernels/kernels.hpp"

namespace ffn::train_detail {

void linear_forward(ThreadPool& pool, ConstMatrixView x, ConstMatrixView w, MatrixView y) {
  const auto gemm = kernels::forward_gemm(kernels::active_kernels(), x.rows);
  pool.run([&](int ith, int nth) {
    auto [t0, t1] = split_range(x.rows, ith, nth);
    if (t1 > t0) gemm(t1 - t0, w.rows, x.cols, x.row(t0), x.stride, w.data, w.stride, y.row(t0), y.stride);
  });
}

void linear_backward(ThreadPool& pool, ConstMatrixView x, ConstMatrixView w, ConstMatrixView dy, MatrixView dx,
                     MatrixView dw) {
  const auto& k = kernels::active_kernels();
  const int64_t T = x.rows, O = w.rows, I = w.cols;
  pool.run([&](int ith, int nth) {
    auto [o0, o1] = split_range(O, ith, nth);
    if (o1 > o0) k.f32_gemm_tn_add(o1 - o0, I, T, dy.data + o0, dy.stride, x.data, x.stride, dw.row(o0), dw.stride);
  });
  if (!dx.data) return;
  pool.run([&](int ith, int nth) {
    auto [t0, t1] = split_range(T, ith, nth);
    if (t1 > t0) k.f32_gemm_nn(t1 - t0, I, O, dy.row(t0), dy.stride, w.data, w.stride, dx.row(t0), dx.stride, false);
  });
}

void rmsnorm_forward(ThreadPool& pool, ConstMatrixView x, const float* gain, MatrixView y, float* rstd) {
  const int64_t D = x.cols;
  pool.run([&](int ith, int nth) {
    auto [t0, t1] = split_range(x.rows, ith, nth);
    for (int64_t t = t0; t < t1; ++t) {
      const float* xr = x.row(t);
      double ss = 0;
      for (int64_t j = 0; j < D; ++j) ss += double(xr[j]) * double(xr[j]);
      const float r = static_cast<float>(1.0 / std::sqrt(ss / double(D) + 1e-5));
      rstd[t] = r;
      float* yr = y.row(t);
      for (int64_t j = 0; j < D; ++j) yr[j] = xr[j] * r * gain[j];
    }
  });
}

void rmsnorm_backward(ThreadPool& pool, ConstMatrixView x, const float* gain, const float* rstd, ConstMatrixView dy,
                      MatrixView dx, float* dgain) {
  const int64_t D = x.cols;
  pool.run([&](int ith, int nth) {
    auto [t0, t1] = split_range(x.rows, ith, nth);
    for (int64_t t = t0; t < t1; ++t) {
      const float* xr = x.row(t);
      const float* dyr = dy.row(t);
      const double r = rstd[t];
      double dot = 0;  // Σ_j a_j·n̂_j
      for (int64_t j = 0; j < D; ++j) dot += double(dyr[j]) * double(gain[j]) * double(xr[j]) * r;
      const double mean = dot / double(D);
      float* dxr = dx.row(t);
      for (int64_t j = 0; j < D; ++j) {
        const double a = double(dyr[j]) * double(gain[j]);
        dxr[j] += static_cast<float>(r * (a - double(xr[j]) * r * mean));
      }
    }
  });
  for (int64_t t = 0; t < x.rows; ++t) {
    const float* xr = x.row(t);
    const float* dyr = dy.row(t);
    for (int64_t j = 0; j < D; ++j) dgain[j] += dyr[j] * (xr[j] * rstd[t]);
  }
}

void embedding_gather(ConstMatrixView table, const uint8_t* context, int64_t K, MatrixView out) {
  const int64_t E = table.cols;
  for (int64_t t = 0; t < out.rows; ++t)
    for (int64_t j = 0; j < K; ++j) {
      const float* src = table.row(context[t * K + j]);
      float* dst = out.row(t) + j * E;
      for (int64_t e = 0; e < E; ++e) dst[e] = src[e];
    }
}

void embedding_scatter_add(ConstMatrixView dout, const uint8_t* context, int64_t K, MatrixView dtable) {
  const int64_t E = dtable.cols;
  for (int64_t t = 0; t < dout.rows; ++t)
    for (int64_t j = 0; j < K; ++j) {
      const float* src = dout.row(t) + j * E;
      float* dst = dtable.row(context[t * K + j]);
      for (int64_t e = 0; e < E; ++e) dst[e] += src[e];
    }
}

double softmax_cross_entropy(ThreadPool& pool, ConstMatrixView logits, const uint8_t* target, MatrixView dlogits) {
  const int64_t T = logits.rows, V = logits.cols;
  std::vector<double> row_loss(static_cast<size_t>(T));
  pool.run([&](int ith, int nth) {
    auto [t0, t1] = split_range(T, ith, nth);
    for (int64_t t = t0; t < t1; ++t) {
      const float* z = logits.row(t);
      double mx = z[0];
      for (int64_t v = 1; v < V; ++v) mx = std::max(mx, double(z[v]));
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(double(z[v]) - mx);
      const double log_sum = std::log(sum) + mx;
      row_loss[size_t(t)] = log_sum - double(z[target[t]]);
      if (!dlogits.data) continue;
      float* dz = dlogits.row(t);
      for (int64_t v = 0; v < V; ++v) {
        const double p = std::exp(double(z[v]) - log_sum);
        dz[v] = static_cast<float>((p - (v == target[t] ? 1.0 : 0.0)) / double(T));
      }
    }
  });
  double total = 0;
  for (double l : row_loss) total += l;
  return total / double(T);
}

}  // namespace ffn::train_detail
