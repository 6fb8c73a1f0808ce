// ffn compare --sparsity: evaluation after training and its reports (compare_sparsity.hpp).
#include "compare_sparsity.hpp"

#include <cmath>
#include <sstream>

#include "ffn/error.hpp"
#include "format.hpp"
#include "io/atomic_file.hpp"
#include "line_plot_svg.hpp"

namespace ffn::cli {

std::vector<double> sparsity_targets(const std::vector<double>& percent) {
  std::vector<double> out;
  for (double p : percent) {
    if (!(p >= 0 && p < 100))
      throw Error("--sparsity " + fixed(p, 2) + ": each target is a percent of hidden channels in [0, 100)");
    for (double q : out)
      if (q == p / 100) throw Error("--sparsity " + fixed(p, 2) + ": named twice");
    out.push_back(p / 100);
  }
  return out;
}

std::vector<SparsityPoint> evaluate_sparsity(LanguageModel& model, const ByteData& data,
                                             const std::vector<double>& targets, SparsityRule rule, double hidden_share,
                                             int64_t eval_tokens, ThreadPool& pool) {
  const int64_t K = model.config().window;
  // Calibration never sees the validation split: the windows come from the training text.
  const Batch calibration = spaced_batch(data.train(), K, eval_tokens);
  const Batch valid = spaced_batch(data.valid(), K, eval_tokens);
  const auto magnitudes = hidden_magnitudes(model, calibration, rule, pool);
  std::vector<float> hidden_thresholds;
  if (hidden_share > 0)
    hidden_thresholds =
        calibrated_thresholds(hidden_magnitudes(model, calibration, SparsityRule::hidden, pool), hidden_share);
  std::vector<SparsityPoint> out;
  for (double s : targets) {
    SparsityPoint p;
    p.target = s;
    p.thresholds = calibrated_thresholds(magnitudes, s);
    p.hidden_thresholds = hidden_thresholds;
    p.eval = sparse_loss(model, valid, p.thresholds, rule, pool, p.hidden_thresholds);
    out.push_back(std::move(p));
  }
  return out;
}

double weights_read(bool gated, double up_skipped, double dropped) {
  return gated ? (1.0 + (1.0 - up_skipped) + (1.0 - dropped)) / 3 : (1.0 + (1.0 - dropped)) / 2;
}

namespace {

const char* rule_name(SparsityRule rule) { return rule == SparsityRule::gate ? "gate" : "hidden"; }

struct MeanSd {
  double mean = 0, sd = 0;  // sd: sample standard deviation (n − 1), 0 for one value
};
MeanSd mean_sd(const std::vector<double>& v) {
  MeanSd m;
  for (double x : v) m.mean += x;
  m.mean /= double(v.size());
  if (v.size() > 1) {
    for (double x : v) m.sd += (x - m.mean) * (x - m.mean);
    m.sd = std::sqrt(m.sd / double(v.size() - 1));
  }
  return m;
}

}  // namespace

nlohmann::json sparsity_json(const VariantSparsity& v) {
  nlohmann::json rows = nlohmann::json::array();
  if (v.points.empty()) return rows;
  const size_t seeds = v.points.size();
  for (size_t i = 0; i < v.points[0].size(); ++i) {
    std::vector<double> losses, diffs, achieved, up_skipped, read, exact;
    nlohmann::json thresholds = nlohmann::json::array(), hidden_thresholds = nlohmann::json::array();
    for (size_t s = 0; s < seeds; ++s) {
      const SparsityPoint& p = v.points[s][i];
      losses.push_back(p.eval.loss);
      diffs.push_back(p.eval.loss - v.dense_losses[s]);
      achieved.push_back(p.eval.dropped_fraction());
      up_skipped.push_back(p.eval.up_skipped_fraction());
      read.push_back(weights_read(v.gated, up_skipped.back(), achieved.back()));
      exact.push_back(p.eval.exact_fraction());
      thresholds.push_back(p.thresholds);
      hidden_thresholds.push_back(p.hidden_thresholds);
    }
    const MeanSd l = mean_sd(losses), d = mean_sd(diffs);
    const double se = d.sd / std::sqrt(double(seeds));
    nlohmann::json row{{"target", v.points[0][i].target},
                       {"rule", rule_name(v.rule)},
                       {"achieved", mean_sd(achieved).mean},
                       {"up_skipped", mean_sd(up_skipped).mean},
                       {"weights_read", mean_sd(read).mean},
                       {"exact_zeros", mean_sd(exact).mean},
                       {"valid_loss_mean", l.mean},
                       {"valid_loss_std", l.sd},
                       {"valid_losses", losses},
                       {"increase", d.mean},
                       {"thresholds", thresholds}};
    if (v.hidden_share > 0) {
      row["hidden_target"] = v.hidden_share;
      row["hidden_thresholds"] = hidden_thresholds;
    }
    if (seeds > 1) {
      row["increase_noise"] = se;
      row["within_noise"] = !(std::abs(d.mean) > 2 * se);
    }
    rows.push_back(row);
  }
  return rows;
}

void print_sparsity_table(FILE* out, const VariantSparsity& v) {
  const MeanSd dense = mean_sd(v.dense_losses);
  char hidden[64] = "";
  if (v.hidden_share > 0) std::snprintf(hidden, sizeof hidden, ", and |h| at %.0f%%", 100 * v.hidden_share);
  std::fprintf(out, "\nactivation sparsity — %s, %s rule%s (dense %.4f)\n%7s %9s %11s %12s %13s %18s  %s\n",
               v.name.c_str(), rule_name(v.rule), hidden, dense.mean, "target", "achieved", "up skipped", "exact zeros",
               "weights read", "valid loss (std)", "increase (noise)");
  for (const auto& row : sparsity_json(v)) {
    std::string increase;
    char buf[96];
    if (row.contains("increase_noise")) {
      const bool within = row["within_noise"];
      const double d = row["increase"];
      std::snprintf(buf, sizeof buf, "%+.4f (%.4f): %s", d, row["increase_noise"].get<double>(),
                    within ? "within noise" : (d < 0 ? "lower, beyond noise" : "higher, beyond noise"));
    } else {
      std::snprintf(buf, sizeof buf, "%+.4f (one seed: noise unknown)", row["increase"].get<double>());
    }
    increase = buf;
    std::fprintf(out, "%6.0f%% %8.1f%% %10.1f%% %11.1f%% %12.1f%% %11s (%.4f)  %s\n", 100 * row["target"].get<double>(),
                 100 * row["achieved"].get<double>(), 100 * row["up_skipped"].get<double>(),
                 100 * row["exact_zeros"].get<double>(), 100 * row["weights_read"].get<double>(),
                 fixed(row["valid_loss_mean"].get<double>(), 4).c_str(), row["valid_loss_std"].get<double>(),
                 increase.c_str());
  }
}

void write_sparsity_csv(const std::string& path, const std::vector<VariantSparsity>& variants) {
  std::ostringstream csv;
  csv << "variant,rule,hidden_target,seed,target,achieved,up_skipped,exact_zeros,weights_read,valid_loss,dense_loss,"
         "increase\n";
  csv.precision(9);
  for (const auto& v : variants)
    for (size_t s = 0; s < v.points.size(); ++s)
      for (const auto& p : v.points[s])
        csv << v.name << ',' << rule_name(v.rule) << ',' << v.hidden_share << ',' << s + 1 << ',' << p.target << ','
            << p.eval.dropped_fraction() << ',' << p.eval.up_skipped_fraction() << ',' << p.eval.exact_fraction() << ','
            << weights_read(v.gated, p.eval.up_skipped_fraction(), p.eval.dropped_fraction()) << ',' << p.eval.loss
            << ',' << v.dense_losses[s] << ',' << p.eval.loss - v.dense_losses[s] << '\n';
  write_file_atomically(path, csv.str());
}

void write_sparsity_svg(const std::string& path, const std::vector<VariantSparsity>& variants) {
  LinePlot plot;
  plot.title = "validation loss increase (nats/byte) against activation sparsity, mean over seeds";
  plot.x_label = "target sparsity (% of hidden channels dropped)";
  plot.y_decimals = 3;
  plot.x_hi = 0;
  for (const auto& v : variants) {
    PlotSeries line;
    for (const auto& row : sparsity_json(v)) {
      line.points.emplace_back(100 * row["target"].get<double>(), row["increase"].get<double>());
      plot.x_hi = std::max(plot.x_hi, line.points.back().first);
      if (&v == &variants.front()) plot.x_ticks.push_back(line.points.back().first);  // the targets
    }
    char last[32] = "";
    if (!line.points.empty()) std::snprintf(last, sizeof last, "  %+.3f", line.points.back().second);
    line.legend = v.name + last;
    plot.series.push_back(std::move(line));
  }
  write_file_atomically(path, line_plot_svg(plot));
}

}  // namespace ffn::cli
