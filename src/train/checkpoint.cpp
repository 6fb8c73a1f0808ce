// Checkpoints of a training run as one safetensors file; losses in the metadata as %.17g,
// which round-trips every double exactly.
#include "train/checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "ffn/error.hpp"
#include "io/safetensors.hpp"

namespace ffn::train_detail {
namespace {

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string join(const std::vector<double>& v) {
  std::string out;
  for (double x : v) {
    if (!out.empty()) out += ',';
    out += exact(x);
  }
  return out;
}

std::vector<double> parse_list(const std::string& path, const std::string& key, const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw Error("checkpoint '" + path + "': metadata " + key + " holds '" + item + "', not a number");
    }
  }
  return out;
}

const std::string& meta(const SafetensorsFile& f, const std::string& key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw Error("checkpoint '" + f.path() + "': metadata " + key + " missing");
  return it->second;
}

}  // namespace

std::string fingerprint(const ModelConfig& m, const TrainOptions& o, const ByteData& data) {
  std::ostringstream s;
  s << "variant=" << variant_name(m.variant) << " window=" << m.window << " embed=" << m.embed
    << " d_model=" << m.d_model << " hidden=" << m.hidden << " layers=" << m.layers;
  if (m.moe()) s << " experts=" << m.experts << " top_k=" << m.top_k << " balance=" << exact(m.balance);
  s << " steps=" << o.steps
    << " batch=" << o.batch << " lr=" << exact(o.lr) << " warmup=" << o.warmup
    << " min_lr_fraction=" << exact(o.min_lr_fraction) << " weight_decay=" << exact(o.weight_decay)
    << " beta1=" << exact(o.beta1) << " beta2=" << exact(o.beta2) << " eps=" << exact(o.eps)
    << " clip=" << exact(o.clip) << " seed=" << o.seed << " data_seed=" << o.data_seed << " eval_every=" << o.eval_every
    << " eval_tokens=" << o.eval_tokens << " train_bytes=" << data.train().size()
    << " valid_bytes=" << data.valid().size();
  return s.str();
}

void save_checkpoint(const std::string& path, const std::string& print, const std::vector<ParameterRef>& params,
                     AdamWState& opt, const RunState& st) {
  std::vector<SafetensorsTensor> tensors;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParameterRef& p = params[i];
    tensors.push_back({"param." + p.name, TensorDtype::f32, {p.size}, p.value});
    tensors.push_back({"adam_m." + p.name, TensorDtype::f32, {p.size}, opt.m[i].data()});
    tensors.push_back({"adam_v." + p.name, TensorDtype::f32, {p.size}, opt.v[i].data()});
  }
  std::vector<double> steps, train_loss, valid_loss;
  for (const CurvePoint& c : st.result.curve) {
    steps.push_back(double(c.step));
    train_loss.push_back(c.train_loss);
    valid_loss.push_back(c.valid_loss);
  }
  write_safetensors(path, tensors,
                    {{"fingerprint", print},
                     {"step", std::to_string(st.step)},
                     {"adam_t", std::to_string(opt.t)},
                     {"step_losses", join(st.result.step_losses)},
                     {"curve_steps", join(steps)},
                     {"curve_train_loss", join(train_loss)},
                     {"curve_valid_loss", join(valid_loss)},
                     {"since_eval", exact(st.since_eval)},
                     {"since_eval_steps", std::to_string(st.since_eval_steps)},
                     {"seconds", exact(st.result.seconds)}});
}

bool load_checkpoint(const std::string& path, const std::string& print, const std::vector<ParameterRef>& params,
                     AdamWState& opt, RunState& st) {
  if (!std::filesystem::exists(path)) return false;
  const SafetensorsFile f(path);
  if (meta(f, "fingerprint") != print)
    throw Error("checkpoint '" + path + "' is of another run: it holds {" + meta(f, "fingerprint") +
                "}, this run is {" + print + "}");
  for (size_t i = 0; i < params.size(); ++i) {
    const ParameterRef& p = params[i];
    const std::pair<std::string, float*> parts[] = {
        {"param." + p.name, p.value}, {"adam_m." + p.name, opt.m[i].data()}, {"adam_v." + p.name, opt.v[i].data()}};
    for (const auto& [name, out] : parts) {
      if (!f.has(name)) throw Error("checkpoint '" + path + "': tensor " + name + " missing");
      const TensorInfo& t = f.tensor(name);
      if (t.elements != p.size || t.dtype != TensorDtype::f32)
        throw Error("checkpoint '" + path + "': tensor " + name + " holds " + std::to_string(t.elements) + " " +
                    t.dtype_name + " values, expected " + std::to_string(p.size) + " F32");
      f.read_f32(name, out);
    }
  }
  st = RunState{};
  st.step = std::stoll(meta(f, "step"));
  opt.t = std::stoll(meta(f, "adam_t"));
  st.result.step_losses = parse_list(path, "step_losses", meta(f, "step_losses"));
  const auto steps = parse_list(path, "curve_steps", meta(f, "curve_steps"));
  const auto train_loss = parse_list(path, "curve_train_loss", meta(f, "curve_train_loss"));
  const auto valid_loss = parse_list(path, "curve_valid_loss", meta(f, "curve_valid_loss"));
  if (train_loss.size() != steps.size() || valid_loss.size() != steps.size() ||
      int64_t(st.result.step_losses.size()) != st.step)
    throw Error("checkpoint '" + path + "': " + std::to_string(st.result.step_losses.size()) + " step losses and " +
                std::to_string(steps.size()) + " curve points disagree with step " + std::to_string(st.step));
  for (size_t i = 0; i < steps.size(); ++i)
    st.result.curve.push_back({int64_t(steps[i]), train_loss[i], valid_loss[i]});
  st.since_eval = parse_list(path, "since_eval", meta(f, "since_eval")).at(0);
  st.since_eval_steps = std::stoll(meta(f, "since_eval_steps"));
  st.result.seconds = parse_list(path, "seconds", meta(f, "seconds")).at(0);
  return true;
}

}  // namespace ffn::train_detail
