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
// With a down target (--down-sparsity, gated blocks) each sparse block also has the down
// threshold that drops that share of the calibration tokens' channels by |h| alone, and
//   down drop  the share of (token, channel) pairs down does not read (the gate drops them,
//              or |h| ≤ the down threshold);
//   down read  the share of channels whose down row some token of the call keeps;
//   limit      then gate + read·up's rows + down read·down's rows.
#include "bench_sparsity.hpp"

#include <algorithm>
#include <atomic>
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

// Reads flush_bytes of its own across the pool (bench_sparsity.hpp: flush_bytes).
class CacheFlush {
 public:
  CacheFlush(int64_t bytes, ThreadPool& pool) : lines_(size_t(bytes / 64)), pool_(pool) {}
  void operator()() {
    if (lines_.empty()) return;
    pool_.run([&](int ith, int nth) {
      const auto [l0, l1] = split_range(int64_t(lines_.size()), ith, nth);
      uint64_t sum = 0;
      for (int64_t l = l0; l < l1; ++l) sum += lines_[size_t(l)].first;
      sink_.fetch_add(sum, std::memory_order_relaxed);  // keeps the reads
    });
  }

 private:
  struct alignas(64) Line {
    uint64_t first = 1;
  };
  std::vector<Line> lines_;
  ThreadPool& pool_;
  std::atomic<uint64_t> sink_{0};
};

struct Inputs {
  std::vector<Matrix> x;
  mutable size_t next = 0;
  const Matrix& take() const { return x[next++ % x.size()]; }
};

// Each timed input's a (hidden_activations: what the gate's threshold judges) or, `values`,
// h (hidden_values: what the down threshold judges), once per T.
std::vector<Matrix> per_input(const InferenceBlock& dense, const Inputs& in, bool values, ThreadPool& pool) {
  std::vector<Matrix> out;
  for (const Matrix& x : in.x) {
    out.emplace_back(x.rows(), dense.config().hidden);
    if (values)
      dense.hidden_values(x.view(), out.back().view(), &pool);
    else
      dense.hidden_activations(x.view(), out.back().view(), &pool);
  }
  return out;
}

// The shares dropped and read (see the header) on the timed inputs: by the gate's threshold
// on a, and for down by it and the down threshold on h (h null: no down threshold, down's
// shares the gate's).
struct Shares {
  double dropped = 0, read = 0, down_dropped = 0, down_read = 0;
};
Shares shares(const std::vector<Matrix>& a, const std::vector<Matrix>* h, float threshold, float down_threshold) {
  Shares s;
  double pairs = 0, channels = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (int64_t j = 0; j < a[i].cols(); ++j) {
      bool any = false, any_down = false;
      for (int64_t t = 0; t < a[i].rows(); ++t) {
        const bool keep = sparse_decode_keeps(a[i].row(t)[j], threshold);
        const bool keep_down = keep && (!h || sparse_decode_keeps((*h)[i].row(t)[j], down_threshold));
        s.dropped += !keep;
        s.down_dropped += !keep_down;
        any = any || keep;
        any_down = any_down || keep_down;
      }
      s.read += any;
      s.down_read += any_down;
    }
    pairs += double(a[i].rows() * a[i].cols());
    channels += double(a[i].cols());
  }
  return {s.dropped / pairs, s.read / channels, s.down_dropped / pairs, s.down_read / channels};
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
      "the dense block's\n",
      static_cast<long long>(kCalibrationTokens), kInputs, b.rounds, b.reps);
  if (b.flush_bytes > 0)
    std::printf(
        "before each timed forward %s MB are read through the caches, so that it reads its weights from memory "
        "as in a model, not from the last-level cache\n",
        fixed(double(b.flush_bytes) / 1e6, 0).c_str());
  const bool down = b.down_target > 0;
  if (down)
    std::printf(
        "down: the share of channels dropped by |h| alone that each down threshold is calibrated to (--down-sparsity; "
        "max_kept_share 1); down drop / down read: as dropped / read, for down's rows\n");
  std::printf("\n%-6s %6s %6s %8s %7s", "dtype", "T", "target", "dropped", "read");
  if (down) std::printf(" %6s %9s %9s", "down", "down drop", "down read");
  std::printf(" %10s %10s %8s %7s\n", "dense ms", "sparse ms", "ratio", "limit");
  CacheFlush flush(b.flush_bytes, pool);
  for (const SparsityRowSet& set : b.sets) {
    const InferenceBlock dense = set.make(SparseDecode{});
    const Matrix calibration = bench_tokens(kCalibrationTokens, D, 99);
    Matrix a(kCalibrationTokens, c.hidden);
    dense.hidden_activations(calibration.view(), a.view(), &pool);
    const bool down = b.down_target > 0;
    float down_threshold = 0.0f;
    if (down) {
      Matrix h(kCalibrationTokens, c.hidden);
      dense.hidden_values(calibration.view(), h.view(), &pool);
      down_threshold = sparsity_threshold(h.view(), b.down_target);
    }
    std::vector<float> thresholds;
    std::vector<std::optional<InferenceBlock>> sparse;
    for (double s : b.targets) {
      thresholds.push_back(s > 0 ? sparsity_threshold(a.view(), s) : 0.0f);
      sparse.emplace_back(set.make(SparseDecode{.enabled = true,
                                                .threshold = thresholds.back(),
                                                .max_tokens = 1 << 30,
                                                .max_kept_share = down ? 1.0 : SparseDecode{}.max_kept_share,
                                                .down_threshold = down_threshold}));
    }
    // Bytes of each matrix in this type (gate and up share the first stage's type here).
    const MatrixTypes types = dense.types();
    const auto bytes = [&](WeightType t, int64_t rows, int64_t cols) {
      return double(weight_type_info(t).row_bytes(cols)) * double(rows);
    };
    const double gate = c.variant.gated ? bytes(types.gate, c.hidden, D) : 0.0;
    const double up = bytes(types.up, c.hidden, D), down_bytes = bytes(types.down, D, c.hidden);
    // Sparse decode's rows of up (gated blocks) and of down's transpose, all channels.
    const double up_rows = c.variant.gated ? bytes(sparse_rows_type(types.up), c.hidden, D) : 0.0;
    const double down_rows = bytes(sparse_rows_type(types.down), c.hidden, D);
    for (int64_t T : b.token_counts) {
      Inputs in;
      for (int i = 0; i < kInputs; ++i) in.x.push_back(bench_tokens(T, D, uint32_t(1000 + i)));
      Matrix y(T, D);
      std::vector<std::vector<double>> ms(b.targets.size() + 1);
      for (int r = 0; r < b.rounds; ++r) {
        ms[0].push_back(median_ms([&] { dense.forward(in.take().view(), y.view(), &pool); }, flush, b.reps));
        for (size_t i = 0; i < sparse.size(); ++i)
          ms[i + 1].push_back(median_ms([&] { sparse[i]->forward(in.take().view(), y.view(), &pool); }, flush, b.reps));
      }
      const double dense_ms = median(ms[0]);
      const std::vector<Matrix> activations = per_input(dense, in, false, pool);
      const std::vector<Matrix> values = down ? per_input(dense, in, true, pool) : std::vector<Matrix>{};
      for (size_t i = 0; i < sparse.size(); ++i) {
        const Shares sh = shares(activations, down ? &values : nullptr, thresholds[i], down_threshold);
        const double sparse_ms = median(ms[i + 1]);
        const double limit = c.variant.gated
                                 ? (gate + sh.read * up_rows + sh.down_read * down_rows) / (gate + up + down_bytes)
                                 : (up + sh.read * down_rows) / (up + down_bytes);
        std::printf("%-6s %6lld %6s %8s %7s", set.dtype.c_str(), static_cast<long long>(T),
                    fixed(b.targets[i], 2).c_str(), fixed(sh.dropped, 3).c_str(), fixed(sh.read, 3).c_str());
        if (down)
          std::printf(" %6s %9s %9s", fixed(b.down_target, 2).c_str(), fixed(sh.down_dropped, 3).c_str(),
                      fixed(sh.down_read, 3).c_str());
        std::printf(" %10s %10s %8s %7s\n", fixed(dense_ms, 3).c_str(), fixed(sparse_ms, 3).c_str(),
                    fixed(sparse_ms / dense_ms, 3).c_str(), fixed(limit, 3).c_str());
        std::fflush(stdout);
        rows.push_back({{"dtype", set.dtype},
                        {"pass", "sparse decode"},
                        {"tokens", T},
                        {"target_sparsity", b.targets[i]},
                        {"threshold", thresholds[i]},
                        {"dropped", sh.dropped},
                        {"read", sh.read},
                        {"down_target", b.down_target},
                        {"down_threshold", down_threshold},
                        {"down_dropped", sh.down_dropped},
                        {"down_read", sh.down_read},
                        {"dense_ms", dense_ms},
                        {"sparse_ms", sparse_ms},
                        {"ratio", sparse_ms / dense_ms},
                        {"limit", limit},
                        {"dense_gbps", (gate + up + down_bytes) / dense_ms / 1e6},
                        {"dense_efficiency", (gate + up + down_bytes) / (memory_gbps * 1e6) / dense_ms},
                        {"sparse_layout_bytes", sparse[i]->sparse_layout_bytes()}});
      }
    }
  }
}

}  // namespace ffn::cli
