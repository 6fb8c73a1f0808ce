// ffn compare: Shazeer's GLU-variants experiment (2020, table 1) on this machine. Trains
// the byte-level language model of train/train.hpp once per variant and seed, the
// FFN block being the one thing that changes, at equal parameter count (the gated blocks'
// hidden = 2/3 of the 2-matrix blocks'), on the same batches, and prints the held-out loss.
// The variant "moe" is a mixture of SwiGLU experts (Mixtral's router, the Switch
// load-balancing loss) at the dense SwiGLU model's *active* parameter count: Switch
// Transformer's question, whether more parameters at the same compute per byte pay.
// With --sparsity, each trained model is also evaluated with its smallest hidden
// activations dropped (compare_sparsity.hpp): what an activation-sparse decode would cost.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "across_processes.hpp"
#include "commands.hpp"
#include "compare_sparsity.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "format.hpp"
#include "io/atomic_file.hpp"
#include "line_plot_svg.hpp"
#include "shipped_files.hpp"
#include "train/train.hpp"

#ifndef FFN_SOURCE_DIR
#error "FFN_SOURCE_DIR must name the source tree (set by tools/ffn/CMakeLists.txt)"
#endif

namespace ffn::cli {
namespace {

constexpr const char* kDataName = "tinyshakespeare.txt";
constexpr const char* kDefaultVariants = "relu,gelu,swiglu,geglu";
constexpr const char* kShazeerEight = "relu,gelu,swish,glu,bilinear,reglu,geglu,swiglu";

// Sizes of the default run and of --quick; each explicit option overrides either.
struct Scale {
  int64_t d, layers, steps, batch, seeds, eval_tokens;
};
// Measured on the 2-core development machine (AVX-512, shared with other work): default
// 15.6 min for the 4 default variants × 3 seeds (GELU's and GEGLU's scalar erf make them
// 2–3× slower than ReLU or SwiGLU) — within the 30 min promised; quick 56 s for 4 × 2,
// within 3 min.
constexpr Scale kDefault{128, 4, 2000, 256, 3, 8192};
constexpr Scale kQuick{64, 2, 1200, 128, 2, 4096};

struct CompareOptions {
  std::string variants = kDefaultVariants;
  std::string data;
  std::optional<int64_t> seeds, d, layers, steps, batch, hidden;
  std::optional<int64_t> eval_tokens;
  int64_t embed = 32, window = 8, eval_every = 0;
  int64_t experts = 8, top_k = 2;  // of the "moe" variant
  double balance = 0.01;           // its load-balancing loss weight (Switch Transformer's α)
  double lr = 3e-3;
  bool quick = false;
  bool json = false;
  std::string csv_path, svg_path, save_dir, resume_dir;
  std::vector<double> sparsity;  // --sparsity: targets in percent; empty: no sparse evaluation
  std::string sparsity_csv, sparsity_svg;
  std::string sparsity_rule = "gate";     // --sparsity-rule: gate or hidden
  std::optional<double> sparsity_hidden;  // --sparsity-hidden: percent
  int64_t save_every = 0;
  int threads = ThreadPool::default_threads();
};

// The copy that travels with this ffn (share/ffn/data, see shipped_files.hpp).
std::filesystem::path shipped_data() { return shipped_file("data", kDataName); }

// Where the default data is looked for, in order.
std::vector<std::filesystem::path> data_candidates() {
  return {std::filesystem::current_path() / ".." / "shared" / "data" / kDataName,
          std::filesystem::path(FFN_SOURCE_DIR) / ".." / "shared" / "data" / kDataName, shipped_data()};
}

std::string resolve_data(const std::string& given) {
  if (!given.empty()) {
    if (!std::filesystem::is_regular_file(given)) throw Error("--data '" + given + "': no such file");
    return given;
  }
  std::string tried;
  for (const auto& p : data_candidates()) {
    if (std::filesystem::is_regular_file(p)) return std::filesystem::weakly_canonical(p).string();
    tried += "\n  " + p.lexically_normal().string();
  }
  throw Error(std::string("no --data given and ") + kDataName + " not found; looked at:" + tried);
}

struct Mean {
  double mean = 0, std = 0;  // std: sample standard deviation (n − 1), 0 for one value
};
Mean mean_std(const std::vector<double>& v) {
  Mean m;
  for (double x : v) m.mean += x;
  m.mean /= double(v.size());
  if (v.size() > 1) {
    for (double x : v) m.std += (x - m.mean) * (x - m.mean);
    m.std = std::sqrt(m.std / double(v.size() - 1));
  }
  return m;
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

struct VariantResult {
  std::string name;
  ModelConfig model;
  int64_t parameters = 0;
  std::vector<TrainResult> runs;                     // one per seed, seed = 1 … K
  std::vector<std::vector<SparsityPoint>> sparsity;  // per seed, per target (with --sparsity)
};

// --sparsity-rule's value (CLI checks it is one of the two).
SparsityRule sparsity_rule_of(const CompareOptions& o) {
  return o.sparsity_rule == "hidden" ? SparsityRule::hidden : SparsityRule::gate;
}

VariantSparsity sparsity_of(const VariantResult& r, SparsityRule rule, double hidden_share) {
  VariantSparsity v{r.name, r.model.variant.gated, rule, hidden_share, {}, r.sparsity};
  for (const auto& run : r.runs) v.dense_losses.push_back(run.valid_loss);
  return v;
}

// The validation curves, mean over seeds per variant, as an SVG line plot: x = step,
// y = nats per byte over the range of the plotted values, a legend in the variants' order.
void write_svg(const std::string& path, const std::vector<VariantResult>& results, int64_t steps) {
  LinePlot plot;
  plot.title = "validation loss (nats/byte), mean over seeds";
  plot.x_label = "step";
  plot.x_hi = double(steps);
  for (const auto& r : results) {
    PlotSeries line;
    for (size_t i = 0; i < r.runs[0].curve.size(); ++i) {
      double sum = 0;
      for (const auto& run : r.runs) sum += run.curve[i].valid_loss;
      line.points.emplace_back(double(r.runs[0].curve[i].step), sum / double(r.runs.size()));
    }
    line.legend = r.name + "  " + fixed(line.points.back().second, 4);
    plot.series.push_back(std::move(line));
  }
  write_file_atomically(path, line_plot_svg(plot));
}

// What the steps of run_compare share: the sizes resolved from the options over the scale,
// the parameter counts they give, and where the runs keep their state.
struct Plan {
  int64_t d = 0, layers = 0, seeds = 0;
  int64_t hidden2 = 0, hidden3 = 0;  // hidden of the 2-matrix blocks, and of the gated ones
  TrainOptions train;
  int64_t p2 = 0, p3 = 0;        // model parameters with 2-matrix and with gated blocks
  double mismatch = 0;           // |p3 − p2| / p2
  std::string state_dir;         // where runs are saved and resumed; empty: neither
  std::vector<double> sparsity;  // activation-sparsity targets, fractions (empty: none)
  SparsityRule sparsity_rule = SparsityRule::gate;
  double sparsity_hidden = 0;  // fraction; 0: none
};

// The data and the machinery every run trains with, set up once.
struct Workbench {
  std::string data_path;
  ByteData data;
  Collective* data_parallel;  // under mpirun: every batch split across the processes
  ThreadPool pool;
  std::vector<const VariantResult*> moe_rows;  // the variants with experts, for the header
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The sizes of the run: each explicit option over the scale (the default or --quick), checked.
Plan resolve_sizes(const CompareOptions& o) {
  const Scale scale = o.quick ? kQuick : kDefault;
  Plan plan;
  plan.d = o.d.value_or(scale.d);
  plan.layers = o.layers.value_or(scale.layers);
  plan.seeds = o.seeds.value_or(scale.seeds);
  if (plan.seeds < 1) throw Error("--seeds = " + std::to_string(plan.seeds) + ": must be ≥ 1");
  if (plan.d < 1) throw Error("--d = " + std::to_string(plan.d) + ": must be ≥ 1");
  plan.hidden2 = o.hidden.value_or(4 * plan.d);
  if (plan.hidden2 < 3) throw Error("--hidden = " + std::to_string(plan.hidden2) + ": must be ≥ 3");
  // Equal parameters: 3·D·H_gated = 2·D·H  ⇒  H_gated = 2H/3, rounded to the nearest.
  plan.hidden3 = (2 * plan.hidden2 + 1) / 3;

  TrainOptions& t = plan.train;
  t.steps = o.steps.value_or(scale.steps);
  t.batch = o.batch.value_or(scale.batch);
  t.lr = o.lr;
  t.warmup = std::max<int64_t>(1, t.steps / 20);
  t.eval_tokens = o.eval_tokens.value_or(scale.eval_tokens);
  t.eval_every = o.eval_every > 0 ? o.eval_every : std::max<int64_t>(1, t.steps / 20);
  validate(t);
  return plan;
}

// Each expert's hidden in the "moe" variant: the active block (router E·D plus k experts of
// 3·D·h) as close as whole units allow to the dense SwiGLU block's 3·D·H_gated.
int64_t moe_hidden(const Plan& plan, const CompareOptions& o) {
  if (o.experts < 2 || o.top_k < 1 || o.top_k > o.experts)
    throw Error("--experts " + std::to_string(o.experts) + " --top-k " + std::to_string(o.top_k) +
                ": need at least 2 experts and 1 ≤ top-k ≤ experts");
  const double h =
      (3.0 * double(plan.d * plan.hidden3) - double(o.experts * plan.d)) / (3.0 * double(plan.d * o.top_k));
  if (h < 1)
    throw Error("--experts " + std::to_string(o.experts) + " --top-k " + std::to_string(o.top_k) +
                ": the router alone exceeds the dense block's parameters at d " + std::to_string(plan.d));
  return std::max<int64_t>(1, std::llround(h));
}

// One entry per named variant, in the order named, its model at the plan's sizes.
std::vector<VariantResult> build_variants(const CompareOptions& o, const Plan& plan) {
  std::vector<std::string> names = split_list(o.variants == "all" ? kShazeerEight : o.variants);
  if (names.empty()) throw Error("--variants = '" + o.variants + "': no variant named");
  std::vector<VariantResult> results;
  for (const auto& n : names) {
    VariantResult r;
    const bool moe = n == "moe";
    r.model.variant = parse_variant(moe ? "swiglu" : n);
    r.name = moe ? "moe" : variant_name(r.model.variant);
    r.model.window = o.window;
    r.model.embed = o.embed;
    r.model.d_model = plan.d;
    r.model.layers = plan.layers;
    r.model.hidden = r.model.variant.gated ? plan.hidden3 : plan.hidden2;
    if (moe) {
      r.model.experts = o.experts;
      r.model.top_k = o.top_k;
      r.model.balance = o.balance;
      r.model.hidden = moe_hidden(plan, o);
    }
    r.parameters = model_active_parameters(r.model);
    for (const auto& earlier : results)
      if (earlier.name == r.name) throw Error("--variants = '" + o.variants + "': " + r.name + " named twice");
    results.push_back(std::move(r));
  }
  return results;
}

// Counts the parameters of a 2-matrix (GELU) and a gated (SwiGLU) model shaped like `base`,
// whichever variants were named, and refuses a --hidden whose rounding leaves them > 1% apart.
void check_equal_parameters(Plan& plan, const ModelConfig& base, const std::vector<VariantResult>& results) {
  ModelConfig two = base, three = base;
  two.experts = three.experts = 0;  // the dense models (whichever variant came first)
  two.variant = parse_variant("gelu");
  two.hidden = plan.hidden2;
  three.variant = parse_variant("swiglu");
  three.hidden = plan.hidden3;
  plan.p2 = model_parameters(two);
  plan.p3 = model_parameters(three);
  plan.mismatch = std::abs(double(plan.p3) - double(plan.p2)) / double(plan.p2);
  if (plan.mismatch > 0.01)
    throw Error("--hidden = " + std::to_string(plan.hidden2) + ": gated blocks at hidden " +
                std::to_string(plan.hidden3) + " give " + std::to_string(plan.p3) + " parameters against " +
                std::to_string(plan.p2) + ", more than 1% apart");
  for (const auto& r : results)
    if (r.model.moe() && std::abs(double(r.parameters) - double(plan.p3)) / double(plan.p3) > 0.01)
      throw Error("moe: " + std::to_string(r.model.experts) + " experts of hidden " + std::to_string(r.model.hidden) +
                  ", top " + std::to_string(r.model.top_k) + " give " + std::to_string(r.parameters) +
                  " active parameters against the dense SwiGLU model's " + std::to_string(plan.p3) +
                  ", more than 1% apart (choose --experts/--top-k/--d so that they can match)");
}

// Checks --save/--resume and creates their directory, and checks that --csv and --svg can
// be written: the files are written at the end of a run of minutes, so a bad path fails now.
// Returns the state directory (empty: runs are neither saved nor resumed).
std::string prepare_files(const CompareOptions& o) {
  if (!o.save_dir.empty() && !o.resume_dir.empty() && o.save_dir != o.resume_dir)
    throw Error("--save '" + o.save_dir + "' and --resume '" + o.resume_dir +
                "': a resumed run saves where it resumes");
  if (o.save_every < 0) throw Error("--save-every = " + std::to_string(o.save_every) + ": must be ≥ 0");
  const std::string state_dir = o.resume_dir.empty() ? o.save_dir : o.resume_dir;
  if (!state_dir.empty()) std::filesystem::create_directories(state_dir);
  if (!o.csv_path.empty()) check_file_writable(o.csv_path, "--csv");
  if (!o.svg_path.empty()) check_file_writable(o.svg_path, "--svg");
  if (o.sparsity.empty() &&
      (!o.sparsity_csv.empty() || !o.sparsity_svg.empty() || o.sparsity_rule != "gate" || o.sparsity_hidden))
    throw Error(
        "--sparsity-csv, --sparsity-svg, --sparsity-rule and --sparsity-hidden need --sparsity (the targets to "
        "evaluate)");
  if (o.sparsity_hidden && !(*o.sparsity_hidden >= 0 && *o.sparsity_hidden < 100))
    throw Error("--sparsity-hidden " + std::to_string(*o.sparsity_hidden) + ": a percent of channels in [0, 100)");
  if (o.sparsity_hidden && o.sparsity_rule == "hidden")
    throw Error(
        "--sparsity-hidden adds a threshold on |h| to the gate rule's; with --sparsity-rule hidden the "
        "targets already threshold |h|");
  if (!o.sparsity_csv.empty()) check_file_writable(o.sparsity_csv, "--sparsity-csv");
  if (!o.sparsity_svg.empty()) check_file_writable(o.sparsity_svg, "--sparsity-svg");
  return state_dir;
}

// The set-up: data, threads, model, training and the parameter balance.
void print_header(FILE* out, const CompareOptions& o, const Plan& plan, const Workbench& bench) {
  const int64_t seeds = plan.seeds;
  std::fprintf(out, "ffn compare — %s (%s train / %s validation bytes), %d thread%s, kernels %s\n",
               bench.data_path.c_str(), grouped(int64_t(bench.data.train().size())).c_str(),
               grouped(int64_t(bench.data.valid().size())).c_str(), bench.pool.size(),
               bench.pool.size() == 1 ? "" : "s", std::string(isa_name(active_isa())).c_str());
  if (bench.data_parallel)
    std::fprintf(out, "data-parallel: every batch split across %d processes\n", bench.data_parallel->size());
  std::fprintf(out,
               "model: %lld-byte window × embedding %lld → d %lld → %lld × (RMSNorm → FFN, residual) → RMSNorm → 256 "
               "logits\ntraining: %lld steps × %lld bytes, AdamW lr %g (warm-up %lld, cosine to 10%%), clip 1.0, "
               "%lld seed%s per variant, the same batches for every variant\n",
               (long long)o.window, (long long)o.embed, (long long)plan.d, (long long)plan.layers,
               (long long)plan.train.steps, (long long)plan.train.batch, plan.train.lr, (long long)plan.train.warmup,
               (long long)seeds, seeds == 1 ? "" : "s");
  std::fprintf(out,
               "parameters: 2-matrix blocks (hidden %lld) %s, gated blocks (hidden %lld = 2/3·%lld) %s — %.2f%% "
               "apart\n\n",
               (long long)plan.hidden2, grouped(plan.p2).c_str(), (long long)plan.hidden3, (long long)plan.hidden2,
               grouped(plan.p3).c_str(), 100.0 * plan.mismatch);
  for (const auto& r : bench.moe_rows) {
    const int64_t total = model_parameters(r->model);
    std::fprintf(out,
                 "moe: %lld SwiGLU experts of hidden %lld, top %lld (softmax, renormalised), load-balancing loss × "
                 "%g — %s active parameters (%.2f%% from the dense SwiGLU model's), %s in all (%.1f×)\n\n",
                 (long long)r->model.experts, (long long)r->model.hidden, (long long)r->model.top_k, r->model.balance,
                 grouped(r->parameters).c_str(),
                 100.0 * std::abs(double(r->parameters) - double(plan.p3)) / double(plan.p3), grouped(total).c_str(),
                 double(total) / double(r->parameters));
  }
  std::fflush(out);
}

// Where run (variant, seed) keeps its state, if the plan keeps any.
CheckpointOptions checkpoint_for(const CompareOptions& o, const Plan& plan, const std::string& name, int64_t seed) {
  CheckpointOptions ckpt;
  if (!plan.state_dir.empty()) {
    ckpt.path =
        (std::filesystem::path(plan.state_dir) / (name + "-seed" + std::to_string(seed) + ".safetensors")).string();
    ckpt.every = o.save_every > 0 ? o.save_every : std::max<int64_t>(1, plan.train.steps / 10);
    ckpt.resume = !o.resume_dir.empty();
  }
  return ckpt;
}

// Trains every (seed, variant), seed-major so that every variant sees seed 1 before any
// sees 2, appending each run to its variant's results. Progress on stderr: a self-rewriting
// line with ETA on a terminal, else one line per finished run.
void train_all(std::vector<VariantResult>& results, const CompareOptions& o, const Plan& plan, Workbench& bench,
               Clock::time_point start) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const int64_t total_steps = int64_t(results.size()) * plan.seeds * plan.train.steps;
  int64_t done_steps = 0;
  double last_draw = -1;
  const int64_t n_runs = int64_t(results.size()) * plan.seeds;
  int64_t run_index = 0;
  for (int64_t s = 1; s <= plan.seeds; ++s) {
    for (auto& r : results) {
      ++run_index;
      TrainOptions t = plan.train;
      t.seed = uint64_t(s);
      t.data_seed = uint64_t(s);
      LanguageModel model(r.model, t.seed);
      const CheckpointOptions ckpt = checkpoint_for(o, plan, r.name, s);
      const int64_t steps_before = (run_index - 1) * t.steps;
      auto progress = [&](int64_t step, double loss) {
        done_steps = steps_before + step;
        if (!tty) return;
        const double now = seconds_since(start);
        if (now - last_draw < 0.25 && step != t.steps) return;
        last_draw = now;
        const double eta = now / double(done_steps) * double(total_steps - done_steps);
        std::fprintf(stderr, "\r[%lld/%lld] %-9s seed %lld  step %lld/%lld  loss %.3f  %3.0f%%  ETA %s   ",
                     (long long)run_index, (long long)n_runs, r.name.c_str(), (long long)s, (long long)step,
                     (long long)t.steps, loss, 100.0 * double(done_steps) / double(total_steps),
                     clock_text(eta).c_str());
        std::fflush(stderr);
      };
      r.runs.push_back(train(model, bench.data, t, &bench.pool, progress, ckpt, bench.data_parallel));
      if (!plan.sparsity.empty())
        r.sparsity.push_back(evaluate_sparsity(model, bench.data, plan.sparsity, plan.sparsity_rule,
                                               plan.sparsity_hidden, t.eval_tokens, bench.pool));
      const TrainResult& last = r.runs.back();
      if (!tty)
        std::fprintf(stderr, "[%lld/%lld] %s seed %lld: validation loss %.4f, %.0f tokens/s, elapsed %s\n",
                     (long long)run_index, (long long)n_runs, r.name.c_str(), (long long)s, last.valid_loss,
                     last.tokens_per_second, clock_text(seconds_since(start)).c_str());
    }
  }
  if (tty) std::fprintf(stderr, "\r%*s\r", 100, "");
}

// The difference from GELU, seed by seed (same seed ⇒ same batches and same key for the
// initial weights): its mean, and the noise as the standard error of that mean,
// sd(differences)/√K. "Exceeds" when |mean| > 2 standard errors. Adds those to the JSON
// row and returns the table's "vs GELU" column.
std::string versus(nlohmann::json& row, const std::vector<double>& losses, const VariantResult& r,
                   const VariantResult* base, const std::string& key = "vs_gelu") {
  if (!base) return "(gelu not run)";
  if (base == &r) return "—";
  std::vector<double> diffs;
  for (size_t i = 0; i < losses.size(); ++i) diffs.push_back(losses[i] - base->runs[i].valid_loss);
  const Mean dm = mean_std(diffs);
  const double se = dm.std / std::sqrt(double(diffs.size()));
  row["diff_" + key] = dm.mean;
  if (diffs.size() <= 1) return (dm.mean < 0 ? "" : "+") + fixed(dm.mean, 4) + " (one seed: noise unknown)";
  const bool exceeds = std::abs(dm.mean) > 2.0 * se;
  row[key == "vs_gelu" ? "diff_noise" : "diff_noise_" + key] = se;
  row[key == "vs_gelu" ? "exceeds_noise" : "exceeds_noise_" + key] = exceeds;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%+.4f (%.4f): %s", dm.mean, se,
                exceeds ? (dm.mean < 0 ? "better, beyond noise" : "worse, beyond noise") : "within noise");
  return buf;
}

// One variant's results: its JSON row (loss over seeds, speed, curves, the difference from
// GELU) and, without --json, its line of the table.
nlohmann::json result_row(const CompareOptions& o, const VariantResult& r, const VariantResult* gelu,
                          const VariantResult* swiglu) {
  std::vector<double> losses, tps;
  for (const auto& run : r.runs) {
    losses.push_back(run.valid_loss);
    tps.push_back(run.tokens_per_second);
  }
  const Mean l = mean_std(losses), speed = mean_std(tps);
  nlohmann::json row{{"variant", r.name},
                     {"hidden", r.model.hidden},
                     {"parameters", r.parameters},
                     {"valid_loss_mean", l.mean},
                     {"valid_loss_std", l.std},
                     {"bits_per_byte", l.mean / std::log(2.0)},
                     {"tokens_per_second", speed.mean},
                     {"valid_losses", losses}};
  nlohmann::json curves = nlohmann::json::array();  // per seed: [step, train_loss, valid_loss]
  for (const auto& run : r.runs) {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& p : run.curve) c.push_back({p.step, p.train_loss, p.valid_loss});
    curves.push_back(c);
  }
  row["curves"] = curves;
  if (!r.sparsity.empty())
    row["sparsity"] = sparsity_json(sparsity_of(r, sparsity_rule_of(o), o.sparsity_hidden.value_or(0) / 100));
  if (r.model.moe()) {
    row["experts"] = r.model.experts;
    row["top_k"] = r.model.top_k;
    row["balance"] = r.model.balance;
    row["total_parameters"] = model_parameters(r.model);
  }
  const std::string versus_text = versus(row, losses, r, gelu);
  if (!o.json)
    std::printf("%-10s %7lld %11s %11s (%.4f) %13s %11s  %s\n", r.name.c_str(), (long long)r.model.hidden,
                grouped(r.parameters).c_str(), fixed(l.mean, 4).c_str(), l.std,
                fixed(l.mean / std::log(2.0), 4).c_str(), fixed(speed.mean, 0).c_str(), versus_text.c_str());
  if (r.model.moe() && swiglu) {
    // Switch Transformer's question: the mixture against the dense block of the same
    // active parameters.
    const std::string against = versus(row, losses, r, swiglu, "vs_swiglu");
    if (!o.json)
      std::printf("%-10s %7s %11s  vs SwiGLU at the same active parameters: %s\n", "", "", "", against.c_str());
  }
  return row;
}

// The results table (without --json: printed with its heading and footnote); returns the
// JSON rows, one per variant.
nlohmann::json report_results(const CompareOptions& o, const Plan& plan, const std::vector<VariantResult>& results,
                              const ByteData& data, Clock::time_point start) {
  const VariantResult *gelu = nullptr, *swiglu = nullptr;
  for (const auto& r : results) {
    if (r.name == "gelu") gelu = &r;
    if (r.name == "swiglu") swiglu = &r;
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json) {
    std::printf("%-10s %7s %11s %18s %13s %11s  %s\n", "variant", "hidden", "parameters", "valid loss (std)",
                "bits/byte", "tokens/s", "vs GELU: difference (noise)");
  }
  for (const auto& r : results) rows.push_back(result_row(o, r, gelu, swiglu));
  if (!o.json)
    std::printf(
        "\nvalidation loss: nats per byte on %lld fixed windows of the last 10%%, mean of %lld seed%s; "
        "noise: standard error of the per-seed difference; total time %s\n",
        (long long)std::min<int64_t>(plan.train.eval_tokens, int64_t(data.valid().size()) - o.window),
        (long long)plan.seeds, plan.seeds == 1 ? "" : "s", clock_text(seconds_since(start)).c_str());
  if (!o.json && !plan.sparsity.empty()) {
    for (const auto& r : results)
      print_sparsity_table(stdout, sparsity_of(r, plan.sparsity_rule, plan.sparsity_hidden));
    std::printf(
        "\nactivation sparsity: per layer, hidden channels with %s below a threshold are dropped%s; thresholds "
        "calibrated per layer on %lld windows of the TRAINING split (the target fraction's quantile, ties kept); "
        "achieved: fraction dropped on validation (down's columns unread), mean over layers, exact zeros included; "
        "up skipped: of those, the ones whose up row is unread too (the gate rule's, in gated blocks); weights read: "
        "the share of the block's weights a decode reads (gated: the gate whole, up's rows not skipped, down's "
        "columns not dropped; 2-matrix: up whole, down's columns not dropped); increase: over the variant's dense "
        "loss, noise the standard error of the per-seed difference\n",
        plan.sparsity_rule == SparsityRule::gate ? "|act(gate)| (gated) or |act(up)| (2-matrix)"
                                                 : "|h| = |act(gate)·up| (gated) or |act(up)| (2-matrix)",
        plan.sparsity_hidden > 0 ? ", and those with |h| below a second threshold (--sparsity-hidden)" : "",
        (long long)std::min<int64_t>(plan.train.eval_tokens, int64_t(data.train().size()) - o.window));
  }
  return rows;
}

// Every run's loss curve as CSV: variant,seed,step,train_loss,valid_loss.
void write_csv(const std::string& path, const std::vector<VariantResult>& results) {
  std::ostringstream csv;
  csv << "variant,seed,step,train_loss,valid_loss\n";
  csv.precision(9);
  for (const auto& r : results)
    for (size_t s = 0; s < r.runs.size(); ++s)
      for (const auto& p : r.runs[s].curve)
        csv << r.name << ',' << s + 1 << ',' << p.step << ',' << p.train_loss << ',' << p.valid_loss << '\n';
  write_file_atomically(path, csv.str());
}

// The --json document on stdout: the set-up and the rows of report_results.
void print_json(const CompareOptions& o, const Plan& plan, const std::string& data_path, const nlohmann::json& rows) {
  nlohmann::json doc{
      {"data", data_path},
      {"model", {{"window", o.window}, {"embed", o.embed}, {"d_model", plan.d}, {"layers", plan.layers}}},
      {"training",
       {{"steps", plan.train.steps},
        {"batch", plan.train.batch},
        {"lr", plan.train.lr},
        {"warmup", plan.train.warmup},
        {"seeds", plan.seeds}}},
      {"parameters", {{"two_matrix", plan.p2}, {"gated", plan.p3}, {"relative_difference", plan.mismatch}}},
      {"threads", o.threads},
      {"results", rows}};
  std::printf("%s\n", doc.dump(2).c_str());
}

// Every option is checked, and every output path tried, before the minutes of training.
void run_compare(const CompareOptions& o) {
  Plan plan = resolve_sizes(o);
  plan.sparsity = sparsity_targets(o.sparsity);
  plan.sparsity_rule = sparsity_rule_of(o);
  plan.sparsity_hidden = o.sparsity_hidden.value_or(0) / 100;
  std::vector<VariantResult> results = build_variants(o, plan);
  for (const auto& r : results)
    if (r.model.moe() && !plan.sparsity.empty())
      throw Error(
          "--sparsity: the moe variant is not evaluated (its experts' channels would need a rule of their "
          "own); name dense variants only");
  check_equal_parameters(plan, results[0].model, results);
  plan.state_dir = prepare_files(o);
  const std::string path = resolve_data(o.data);
  Workbench bench{
      path, ByteData::from_file(path), data_parallel_group(), ThreadPool(threads_per_process(o.threads)), {}};
  for (const auto& r : results)
    if (r.model.moe()) bench.moe_rows.push_back(&r);
  print_header(o.json ? stderr : stdout, o, plan, bench);  // with --json stdout carries only the JSON

  const Clock::time_point start = Clock::now();
  train_all(results, o, plan, bench, start);
  if (bench.data_parallel && bench.data_parallel->rank() != 0) return;  // rank 0 prints and writes the results

  const nlohmann::json rows = report_results(o, plan, results, bench.data, start);
  if (!o.csv_path.empty()) write_csv(o.csv_path, results);
  if (!o.svg_path.empty()) write_svg(o.svg_path, results, plan.train.steps);
  std::vector<VariantSparsity> sparsity;
  for (const auto& r : results) sparsity.push_back(sparsity_of(r, plan.sparsity_rule, plan.sparsity_hidden));
  if (!o.sparsity_csv.empty()) write_sparsity_csv(o.sparsity_csv, sparsity);
  if (!o.sparsity_svg.empty()) write_sparsity_svg(o.sparsity_svg, sparsity);
  if (o.json) print_json(o, plan, path, rows);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Shazeer's GLU-variants experiment: train a byte-level LM per FFN variant at equal parameters");
  auto o = std::make_shared<CompareOptions>();
  cmd->footer(
      std::string("Default data: the first of\n    ../shared/data/") + kDataName +
      " (relative to the current directory)\n    " +
      (std::filesystem::path(FFN_SOURCE_DIR) / ".." / "shared" / "data" / kDataName).lexically_normal().string() +
      " (beside the source tree this ffn was built from)\n    " + shipped_data().lexically_normal().string() +
      " (the copy shipped with this ffn)" +
      "\nDefault run: d 128, 4 layers, 2000 steps of 256 bytes, 3 seeds (15.6 min measured on 2 busy cores "
      "for the 4 default variants); --quick: d 64, 2 layers, 1200 steps of 128 bytes, 2 seeds (under a minute). "
      "--d/--layers/--steps/--batch/--seeds/--eval-tokens override either.");
  cmd->add_option("--variants", o->variants,
                  std::string("comma-separated variants, or 'all' for Shazeer's eight (") + kShazeerEight +
                      "); 'moe': SwiGLU experts at the SwiGLU model's active parameters")
      ->capture_default_str();
  cmd->add_option("--experts", o->experts, "experts of the moe variant")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "experts per byte of the moe variant")->capture_default_str();
  cmd->add_option("--balance", o->balance, "weight of the moe variant's load-balancing loss (Switch's α)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--data", o->data, "a text file (first 90% train, last 10% validation)")->option_text("FILE");
  cmd->add_option("--seeds", o->seeds, "seeds per variant (default 3; --quick 2)");
  cmd->add_flag("--quick", o->quick, "a small model and short training");
  cmd->add_option("--csv", o->csv_path, "write the loss curves (variant,seed,step,train_loss,valid_loss) here")
      ->option_text("FILE");
  cmd->add_option("--svg", o->svg_path, "plot the validation curves (mean over seeds) as SVG here")
      ->option_text("FILE");
  cmd->add_option("--save", o->save_dir,
                  "keep each run's model and AdamW state in DIR/<variant>-seed<s>.safetensors (atomic rewrites)")
      ->option_text("DIR");
  cmd->add_option("--save-every", o->save_every, "steps between saves (default steps/10; and after the last)");
  cmd->add_option("--resume", o->resume_dir,
                  "continue from the states in DIR (finished runs are not retrained), bit-identical to an "
                  "uninterrupted run; keeps saving there")
      ->option_text("DIR");
  cmd->add_option("--sparsity", o->sparsity,
                  "after training, the validation loss with each layer's hidden channels of smallest |activation| "
                  "dropped, at these targets (percent of channels, e.g. 0,25,50,90; thresholds calibrated on the "
                  "training split)")
      ->delimiter(',')
      ->option_text("PERCENT,…");
  cmd->add_option("--sparsity-rule", o->sparsity_rule,
                  "which value --sparsity thresholds in gated blocks: gate (|act(gate)|, CATS: a decode skips up's "
                  "rows and down's columns) or hidden (|act(gate)·up|, the input of down as TEAL thresholds it: a "
                  "decode reads gate and up whole and skips down's columns only)")
      ->check(CLI::IsMember({"gate", "hidden"}))
      ->capture_default_str();
  cmd->add_option("--sparsity-hidden", o->sparsity_hidden,
                  "with the gate rule, also drop the channels whose |h| = |act(gate)·up| is below a threshold "
                  "calibrated per layer to drop this percent by |h| alone: down's columns only, up's row having "
                  "been read (both rules at once)")
      ->option_text("PERCENT");
  cmd->add_option("--sparsity-csv", o->sparsity_csv,
                  "write every run's sparse evaluation (variant,rule,seed,target,achieved,exact_zeros,weights_read,"
                  "valid_loss,dense_loss,increase) here")
      ->option_text("FILE");
  cmd->add_option("--sparsity-svg", o->sparsity_svg, "plot the loss increase against the sparsity target here")
      ->option_text("FILE");
  cmd->add_flag("--json", o->json, "print the results as JSON on stdout (progress and set-up on stderr)");
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--d", o->d, "model width D (default 128; --quick 64)");
  cmd->add_option("--layers", o->layers, "residual FFN blocks L (default 4; --quick 2)");
  cmd->add_option("--hidden", o->hidden, "hidden of the 2-matrix blocks (default 4·D); gated: 2/3 of it");
  cmd->add_option("--steps", o->steps, "training steps (default 2000; --quick 1200)");
  cmd->add_option("--batch", o->batch, "bytes predicted per step (default 256; --quick 128)");
  cmd->add_option("--embed", o->embed, "embedding width E of one byte")->capture_default_str();
  cmd->add_option("--window", o->window, "bytes of context K")->capture_default_str();
  cmd->add_option("--lr", o->lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--eval-tokens", o->eval_tokens, "size of the fixed validation set (default 8192; --quick 4096)");
  cmd->add_option("--eval-every", o->eval_every, "steps between points of the loss curve (default steps/20)");
  cmd->callback([o] { run_compare(*o); });
}

}  // namespace ffn::cli
