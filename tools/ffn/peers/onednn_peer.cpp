// ffn-peer-onednn: the peer ffn bench --peers times against: one feed-forward block computed
// with oneDNN's matmul primitive — three products, the activation (and the gate's product)
// fused into them as post-ops — in f32, weights reordered once into the layout oneDNN
// prefers (not timed). Runs in its own process so that oneDNN's OpenMP threads never spin
// beside ffn's pool; threads come from OMP_NUM_THREADS, set by the caller.
//
//   ffn-peer-onednn --activation swish --gated 1 --d 4096 --hidden 11008 --tokens 1,16,256 --reps 5 [--budget 20]
// prints {"timing": T} just before each token count's warm-up (ffn bench's deadline for the
// row runs from there), then one JSON object: {"library": "oneDNN 2.6.3", "ms": {"1": 12.3, ...},
// "reps": {"1": 5, ...}, "over_budget": {"1024": 31000.0}, "check_rel_err": 2e-7}: median ms
// per T of as many repetitions (at most --reps) as fit in --budget seconds after the warm-up
// (a T whose warm-up alone took longer is not timed; over_budget gives its warm-up's ms), and
// the worst relative error of token 0's output against a double-precision computation of
// the same block (so a wrong primitive cannot pass for fast).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

algorithm eltwise_for(const std::string& activation) {
  static const std::unordered_map<std::string, algorithm> by_name = {
      {"relu", algorithm::eltwise_relu},           {"gelu", algorithm::eltwise_gelu_erf},
      {"gelu_tanh", algorithm::eltwise_gelu_tanh}, {"swish", algorithm::eltwise_swish},
      {"sigmoid", algorithm::eltwise_logistic},    {"identity", algorithm::eltwise_linear}};
  const auto it = by_name.find(activation);
  if (it == by_name.end()) throw std::runtime_error("no oneDNN eltwise for activation '" + activation + "'");
  return it->second;
}

// A weight of nn.Linear's layout [N][K] (row-major), seen by matmul as [K][N] (format ba),
// reordered once into the layout the primitive `pd` asks for.
memory prepared_weight(const dnnl::engine& eng, dnnl::stream& s, const dnnl::matmul::primitive_desc& pd,
                       std::vector<float>& rows_n_by_k, int64_t K, int64_t N) {
  memory user({{K, N}, DataType::f32, Tag::ba}, eng, rows_n_by_k.data());
  memory packed(pd.weights_desc(), eng);
  dnnl::reorder(user, packed).execute(s, user, packed);
  s.wait();
  return packed;
}

std::vector<float> uniform(int64_t n, float bound, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// act(z) in double, for the check below.
double activation_value(const std::string& a, double z) {
  if (a == "relu") return z < 0 ? 0 : z;
  if (a == "gelu") return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
  if (a == "gelu_tanh") return 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
  if (a == "swish") return z / (1 + std::exp(-z));
  if (a == "sigmoid") return 1 / (1 + std::exp(-z));
  return z;
}

// max |y − exact| / max |exact| over token 0's outputs, exact in double from the same
// weights: shows that the timed primitives compute the block, not something cheaper.
double check_first_token(const std::string& a, bool gated, int64_t D, int64_t H, const std::vector<float>& x,
                         const std::vector<float>& w_gate, const std::vector<float>& w_up,
                         const std::vector<float>& w_down, const float* y) {
  std::vector<double> h(static_cast<size_t>(H));
  for (int64_t j = 0; j < H; ++j) {
    double u = 0, g = 0;
    for (int64_t k = 0; k < D; ++k) {
      u += double(w_up[j * D + k]) * x[k];
      if (gated) g += double(w_gate[j * D + k]) * x[k];
    }
    h[j] = gated ? activation_value(a, g) * u : activation_value(a, u);
  }
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < D; ++i) {
    double exact = 0;
    for (int64_t j = 0; j < H; ++j) exact += double(w_down[i * H + j]) * h[j];
    worst = std::max(worst, std::abs(y[i] - exact));
    scale = std::max(scale, std::abs(exact));
  }
  return scale > 0 ? worst / scale : worst;
}

struct Timed {
  double median_ms = 0;
  int reps = 0;  // 0: the warm-up alone was over the budget, nothing timed
  double warm_up_ms = 0;
};

// A warm-up, then as many of `reps` repetitions as the warm-up's time says fit in
// budget_s (no budget: budget_s <= 0).
Timed timed(int reps, double budget_s, const std::function<void()>& run) {
  Timed out;
  const auto warm_start = std::chrono::steady_clock::now();
  run();  // warm-up
  out.warm_up_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_start).count();
  if (budget_s > 0) {
    if (out.warm_up_ms > budget_s * 1e3) return out;
    reps = std::max(1, std::min(reps, int(budget_s * 1e3 / std::max(out.warm_up_ms, 1e-6))));
  }
  out.reps = reps;
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  out.median_ms = ms[ms.size() / 2];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oneDNN's matmul computing one feed-forward block (the peer of ffn bench --peers)"};
  std::string activation = "swish", tokens = "1";
  bool gated = true;
  int64_t D = 0, H = 0;
  int reps = 5;
  double budget_s = 0;
  app.add_option("--activation", activation, "relu, gelu, gelu_tanh, swish, sigmoid, identity")->required();
  app.add_option("--gated", gated, "1: act(x·W_gateᵀ)⊙(x·W_upᵀ); 0: act(x·W_upᵀ)")->required();
  app.add_option("--d", D, "model width")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--hidden", H, "hidden width")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  app.add_option("--tokens", tokens, "comma-separated token counts")->required();
  app.add_option("--reps", reps, "timed repetitions (median reported)")->check(CLI::Range(1, 1000));
  app.add_option("--budget", budget_s, "seconds for each T's timed repetitions (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    const algorithm act = eltwise_for(activation);
    std::vector<float> w_gate = gated ? uniform(H * D, 0.02f, 1) : std::vector<float>();
    std::vector<float> w_up = uniform(H * D, 0.02f, 2), w_down = uniform(D * H, 0.02f, 3);
    std::string out = "{\"library\": \"oneDNN " + std::to_string(dnnl::version()->major) + "." +
                      std::to_string(dnnl::version()->minor) + "." + std::to_string(dnnl::version()->patch) +
                      "\", \"ms\": {";
    std::string reps_out, over_budget;  // the "reps" and "over_budget" objects' members
    bool first = true;
    double worst_check = 0;
    std::stringstream list(tokens);
    for (std::string item; std::getline(list, item, ',');) {
      if (item.empty()) continue;
      const int64_t T = std::stoll(item);
      const memory::desc x_md({T, D}, DataType::f32, Tag::ab), h_md({T, H}, DataType::f32, Tag::ab);
      const memory::desc y_md({T, D}, DataType::f32, Tag::ab);
      const memory::desc w_in_any({D, H}, DataType::f32, Tag::any), w_down_any({H, D}, DataType::f32, Tag::any);
      // up: u = x·W_upᵀ, with act fused for 2-matrix blocks.
      dnnl::post_ops up_ops;
      // alpha: relu's negative slope (0), swish's β (1), linear's scale (1).
      const float alpha = act == algorithm::eltwise_relu ? 0.0f : 1.0f;
      if (!gated) up_ops.append_eltwise(1.0f, act, alpha, 0.0f);
      dnnl::primitive_attr up_attr;
      up_attr.set_post_ops(up_ops);
      dnnl::matmul::primitive_desc up_pd({x_md, w_in_any, h_md}, up_attr, eng);
      // gate: h = act(x·W_gateᵀ) ⊙ u, the activation and the product as post-ops.
      dnnl::post_ops gate_ops;
      gate_ops.append_eltwise(1.0f, act, alpha, 0.0f);
      gate_ops.append_binary(algorithm::binary_mul, h_md);
      dnnl::primitive_attr gate_attr;
      gate_attr.set_post_ops(gate_ops);
      dnnl::matmul::primitive_desc gate_pd({x_md, w_in_any, h_md}, gate_attr, eng);
      dnnl::matmul::primitive_desc down_pd({h_md, w_down_any, y_md}, eng);

      memory up_w = prepared_weight(eng, s, up_pd, w_up, D, H);
      memory gate_w = gated ? prepared_weight(eng, s, gate_pd, w_gate, D, H) : memory();
      memory down_w = prepared_weight(eng, s, down_pd, w_down, H, D);
      std::vector<float> x_data = uniform(T * D, 1.0f, 4);
      memory x(x_md, eng, x_data.data()), u(h_md, eng), h(h_md, eng), y(y_md, eng);
      dnnl::matmul up(up_pd), gate(gate_pd), down(down_pd);
      std::printf("{\"timing\": %lld}\n", static_cast<long long>(T));
      std::fflush(stdout);
      const Timed t = timed(reps, budget_s, [&] {
        up.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, up_w}, {DNNL_ARG_DST, gated ? u : h}});
        if (gated)
          gate.execute(s, {{DNNL_ARG_SRC, x},
                           {DNNL_ARG_WEIGHTS, gate_w},
                           {DNNL_ARG_DST, h},
                           {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, u}});
        down.execute(s, {{DNNL_ARG_SRC, h}, {DNNL_ARG_WEIGHTS, down_w}, {DNNL_ARG_DST, y}});
        s.wait();
      });
      const std::string key = "\"" + std::to_string(T) + "\": ";
      if (t.reps == 0) {
        char warm[32];
        std::snprintf(warm, sizeof warm, "%.6g", t.warm_up_ms);
        over_budget += (over_budget.empty() ? "" : ", ") + key + warm;
        continue;
      }
      out += std::string(first ? "" : ", ") + key + std::to_string(t.median_ms);
      reps_out += (reps_out.empty() ? "" : ", ") + key + std::to_string(t.reps);
      first = false;
      worst_check = std::max(worst_check, check_first_token(activation, gated, D, H, x_data, w_gate, w_up, w_down,
                                                            static_cast<const float*>(y.get_data_handle())));
    }
    std::printf("%s}, \"reps\": {%s}, \"over_budget\": {%s}, \"check_rel_err\": %.3g}\n", out.c_str(), reps_out.c_str(),
                over_budget.c_str(), worst_check);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ffn-peer-onednn: %s\n", e.what());
    return 1;
  }
  return 0;
}
