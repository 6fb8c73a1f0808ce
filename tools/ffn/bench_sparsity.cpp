// ffn bench --sparsity (bench_sparsity.hpp). For each weight type: the dense block, and for
// each target s a sparse-decode block of the same weights whose threshold is calibrated to
// drop s of the hidden channels on 256 calibration tokens (other tokens than the timed ones;
// s = 0: threshold 0, only exact zeros, which measures the sparse path's own overhead). Every
// timed call takes the next of 16 inputs, so each token's channels are its own and differ
// from call to call, as in decode. Rounds alternate dense and sparse rows so that drift of
// the machine falls on both; each figure is the median over rounds of each round's median.
//   dropped   the share of (token, channel) pairs the threshold drops on the timed inputs;
//   read      the share of channels whose rows some token of a call keeps (the union: what
//             the sparse path reads of up and down);
//   limit     the bytes sparse decode must read over the dense block's: gate + read·(its rows
//             of up and down: as stored, or a block type's q8_0 copies) (2-matrix blocks:
//             up + read·down's rows), the time ratio at the memory roof.
#include "bench_sparsity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "bench_rows.hpp"
#include "ffn/accounting.hpp"
#include "ffn/error.hpp"
#include "format.hpp"
#include "timing.hpp"

namespace ffn::cli {
namespace {

constexpr int64_t kCalibrationTokens = 256;
constexpr int kInputs = 16;

struct Inputs {
  std::vector<Matrix> x;
  mutable size_t next = 0;
  const Matrix& take() const { return x[next++ % x.size()]; }
};

// Each timed input's activations (hidden_activations: what the thresholds judge), once per T.
std::vector<Matrix> activations_of(const InferenceBlock& dense, const Inputs& in, ThreadPool& pool) {
  std::vector<Matrix> out;
  for (const Matrix& x : in.x) {
    out.emplace_back(x.rows(), dense.config().hidden);
    dense.hidden_activations(x.view(), out.back().view(), &pool);
  }
  return out;
}

// The shares dropped and read (see the header) of a threshold on the timed inputs' activations.
std::pair<double, double> shares(const std::vector<Matrix>& activations, float threshold) {
  double dropped = 0, read = 0, pairs = 0, channels = 0;
  for (const Matrix& a : activations) {
    for (int64_t j = 0; j < a.cols(); ++j) {
      bool any = false;
      for (int64_t t = 0; t < a.rows(); ++t) {
        const bool keep = !(std::abs(a.row(t)[j]) <= threshold);
        dropped += !keep;
        any = any || keep;
      }
      read += any;
    }
    pairs += double(a.rows() * a.cols());
    channels += double(a.cols());
  }
  return {dropped / pairs, read / channels};
}

}  // namespace

std::vector<double> parse_sparsity_targets(const std::string& list) {
  std::vector<double> v;
  for (const auto& s : split_list(list)) {
    try {
      v.push_back(std::stod(s));
    } catch (const std::exception&) {
      throw Error("--sparsity '" + s + "': not a number");
    }
  }
  if (v.empty()) throw Error("--sparsity: give targets, e.g. 0,0.5,0.7,0.95");
  const bool percent = std::any_of(v.begin(), v.end(), [](double x) { return x > 1.0; });
  for (double& x : v) {
    if (percent) x /= 100.0;
    if (!(x >= 0.0 && x < 1.0))
      throw Error("--sparsity " + fixed(percent ? 100 * x : x, 2) + ": must be in [0, 1) (or per cent in [0, 100))");
  }
  return v;
}

void bench_sparsity(const SparsityBench& b, ThreadPool& pool, double memory_gbps, nlohmann::json& rows) {
  const BlockConfig& c = b.config;
  const int64_t D = c.d_model;
  std::printf(
      "sparse decode (--sparsity): each target's threshold calibrated on %lld other tokens; every call a new input "
      "(%d in turn); %d alternating rounds, median of rounds of medians of %d\n"
      "dropped: (token, channel) pairs dropped; read: channels some token of the call keeps; limit: bytes read over "
      "the dense block's\n\n",
      static_cast<long long>(kCalibrationTokens), kInputs, b.rounds, b.reps);
  std::printf("%-6s %6s %6s %8s %7s %10s %10s %8s %7s\n", "dtype", "T", "target", "dropped", "read", "dense ms",
              "sparse ms", "ratio", "limit");
  for (const SparsityRowSet& set : b.sets) {
    const InferenceBlock dense = set.make(SparseDecode{});
    const Matrix calibration = bench_tokens(kCalibrationTokens, D, 99);
    Matrix a(kCalibrationTokens, c.hidden);
    dense.hidden_activations(calibration.view(), a.view(), &pool);
    std::vector<float> thresholds;
    std::vector<std::optional<InferenceBlock>> sparse;
    for (double s : b.targets) {
      thresholds.push_back(s > 0 ? sparsity_threshold(a.view(), s) : 0.0f);
      sparse.emplace_back(
          set.make(SparseDecode{.enabled = true, .threshold = thresholds.back(), .max_tokens = 1 << 30}));
    }
    // Bytes of each matrix in this type (gate and up share the first stage's type here).
    const MatrixTypes types = dense.types();
    const auto bytes = [&](WeightType t, int64_t rows, int64_t cols) {
      return double(weight_type_info(t).row_bytes(cols)) * double(rows);
    };
    const double gate = c.variant.gated ? bytes(types.gate, c.hidden, D) : 0.0;
    const double up = bytes(types.up, c.hidden, D), down = bytes(types.down, D, c.hidden);
    for (int64_t T : b.token_counts) {
      Inputs in;
      for (int i = 0; i < kInputs; ++i) in.x.push_back(bench_tokens(T, D, uint32_t(1000 + i)));
      Matrix y(T, D);
      std::vector<std::vector<double>> ms(b.targets.size() + 1);
      for (int r = 0; r < b.rounds; ++r) {
        ms[0].push_back(median_ms([&] { dense.forward(in.take().view(), y.view(), &pool); }, b.reps));
        for (size_t i = 0; i < sparse.size(); ++i)
          ms[i + 1].push_back(median_ms([&] { sparse[i]->forward(in.take().view(), y.view(), &pool); }, b.reps));
      }
      const double dense_ms = median(ms[0]);
      const std::vector<Matrix> activations = activations_of(dense, in, pool);
      for (size_t i = 0; i < sparse.size(); ++i) {
        const auto [dropped, read] = shares(activations, thresholds[i]);
        const double sparse_ms = median(ms[i + 1]);
        // Sparse decode's rows of up and down, all channels (read of them is read).
        const double rows_bytes = double(sparse[i]->sparse_layout_bytes());
        const double limit =
            c.variant.gated ? (gate + read * rows_bytes) / (gate + up + down) : (up + read * rows_bytes) / (up + down);
        std::printf("%-6s %6lld %6s %8s %7s %10s %10s %8s %7s\n", set.dtype.c_str(), static_cast<long long>(T),
                    fixed(b.targets[i], 2).c_str(), fixed(dropped, 3).c_str(), fixed(read, 3).c_str(),
                    fixed(dense_ms, 3).c_str(), fixed(sparse_ms, 3).c_str(), fixed(sparse_ms / dense_ms, 3).c_str(),
                    fixed(limit, 3).c_str());
        std::fflush(stdout);
        rows.push_back({{"dtype", set.dtype},
                        {"pass", "sparse decode"},
                        {"tokens", T},
                        {"target_sparsity", b.targets[i]},
                        {"threshold", thresholds[i]},
                        {"dropped", dropped},
                        {"read", read},
                        {"dense_ms", dense_ms},
                        {"sparse_ms", sparse_ms},
                        {"ratio", sparse_ms / dense_ms},
                        {"limit", limit},
                        {"dense_gbps", (gate + up + down) / dense_ms / 1e6},
                        {"dense_efficiency", (gate + up + down) / (memory_gbps * 1e6) / dense_ms},
                        {"sparse_layout_bytes", sparse[i]->sparse_layout_bytes()}});
      }
    }
  }
}

}  // namespace ffn::cli
