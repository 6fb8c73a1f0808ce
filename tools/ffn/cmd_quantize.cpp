// ffn quantize: a checkpoint's MLP tensors (one layer or all) written as GGUF in a chosen
// weight type, with the size before and after and the error the type costs, measured by
// reading the written file back and running it against the f32 block on random tokens.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "commands.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "ffn/gguf.hpp"
#include "format.hpp"

namespace ffn::cli {
namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  int64_t layer = 0;
  bool all_layers = false;
  std::string variant;
  int64_t tokens = 16;
  int threads = ThreadPool::default_threads();
};

// The GGUF tensor type of a weight type (the weight-type table's number).
GgmlType ggml_type_of(WeightType t) { return static_cast<GgmlType>(weight_type_info(t).gguf_type); }

// Adds one layer's tensors under GGUF's names; weights [out][in] are ne = {in, out}.
void add_layer(GgufWriter& w, const Block& b, int64_t layer, GgmlType type) {
  const auto& c = b.config();
  const auto& wt = b.weights();
  const std::string p = "blk." + std::to_string(layer) + ".ffn_";
  if (c.variant.gated) w.add_tensor(p + "gate.weight", type, {c.d_model, c.hidden}, wt.gate.data());
  w.add_tensor(p + "up.weight", type, {c.d_model, c.hidden}, wt.up.data());
  w.add_tensor(p + "down.weight", type, {c.hidden, c.d_model}, wt.down.data());
  if (c.bias) {
    if (c.variant.gated) w.add_tensor(p + "gate.bias", GgmlType::f32, {c.hidden}, wt.gate_bias.data());
    w.add_tensor(p + "up.bias", GgmlType::f32, {c.hidden}, wt.up_bias.data());
    w.add_tensor(p + "down.bias", GgmlType::f32, {c.d_model}, wt.down_bias.data());
  }
}

struct ErrorReport {
  double relative_rms = 0;
  double max_abs = 0;
};

// y of the original block against y of the block read back from the written file.
ErrorReport measure_error(const Block& original, const Block& stored, int64_t tokens, ThreadPool& pool) {
  const int64_t D = original.config().d_model;
  Matrix x(tokens, D), y_ref(tokens, D), y(tokens, D);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
  original.forward(x.view(), y_ref.view(), &pool);
  stored.forward(x.view(), y.view(), &pool);
  double err2 = 0, ref2 = 0;
  ErrorReport r;
  for (int64_t i = 0; i < y.size(); ++i) {
    const double e = double(y.data()[i]) - double(y_ref.data()[i]);
    err2 += e * e;
    ref2 += double(y_ref.data()[i]) * double(y_ref.data()[i]);
    r.max_abs = std::max(r.max_abs, std::fabs(e));
  }
  r.relative_rms = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return r;
}

void run_quantize(const QuantizeOptions& o) {
  const WeightType type = parse_weight_type(o.type);
  LoadOptions load;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  const Checkpoint input(o.input);
  const std::vector<int64_t> layers = o.all_layers ? input.layers() : std::vector<int64_t>{o.layer};
  if (layers.empty()) throw Error(o.input + ": no feed-forward block found");

  const bool progress = isatty(fileno(stderr)) != 0;  // a progress line only on a terminal
  GgufWriter writer;
  std::vector<Block> originals;
  int64_t f32_bytes = 0;
  for (int64_t layer : layers) {
    load.layer = layer;
    LoadedBlock loaded = input.load(load);
    const auto& c = loaded.block.config();
    if (!originals.empty() && !(c.variant == originals.front().config().variant))
      throw Error(o.input + ": layer " + std::to_string(layer) + " is " + variant_name(c.variant) + " but layer " +
                  std::to_string(layers.front()) + " is " + variant_name(originals.front().config().variant));
    if (!weight_bytes(c, type))
      throw Error(o.input + ": d_model " + std::to_string(c.d_model) + " and hidden " + std::to_string(c.hidden) +
                  " must be multiples of 32 to store " + o.type);
    add_layer(writer, loaded.block, layer, ggml_type_of(type));
    f32_bytes += *weight_bytes(c, WeightType::f32);
    load.variant = c.variant;  // every layer must be the same block
    originals.push_back(std::move(loaded.block));
    if (progress) {
      std::fprintf(stderr, "\rread layer %lld of %zu", static_cast<long long>(layer), layers.size());
      std::fflush(stderr);
    }
  }
  const auto& first = originals.front().config();
  writer.set_string("general.name", std::filesystem::path(o.input).filename().string() + " MLP (ffn quantize)");
  writer.set_string("ffn.variant", variant_name(first.variant));
  writer.set_u64("ffn.d_model", static_cast<uint64_t>(first.d_model));
  writer.set_u64("ffn.hidden", static_cast<uint64_t>(first.hidden));
  writer.set_u64("ffn.layer_count", layers.size());
  writer.write(o.output);
  const auto out_bytes = static_cast<int64_t>(std::filesystem::file_size(o.output));
  if (progress) std::fprintf(stderr, "\r%40s\r", "");
  std::printf("%s: %zu layer%s of %s, as %s\n", o.output.c_str(), layers.size(), layers.size() == 1 ? "" : "s",
              variant_name(first.variant).c_str(), o.type.c_str());
  std::printf("size: %s of f32 weights and biases → %s file (%s of f32)\n", megabytes(f32_bytes).c_str(),
              megabytes(out_bytes).c_str(), fixed(double(out_bytes) / double(f32_bytes), 3).c_str());

  ThreadPool pool(o.threads);
  const Checkpoint written(o.output);
  for (size_t i = 0; i < layers.size(); ++i) {
    load.layer = layers[i];
    const Block stored = written.load(load).block;
    const ErrorReport r = measure_error(originals[i], stored, o.tokens, pool);
    char rms[32], max_abs[32];
    std::snprintf(rms, sizeof rms, "%.2e", r.relative_rms);
    std::snprintf(max_abs, sizeof max_abs, "%.2e", r.max_abs);
    std::printf("layer %lld: error against f32 on %lld random tokens (N(0,1)): relative RMS %s, max |Δy| %s\n",
                static_cast<long long>(layers[i]), static_cast<long long>(o.tokens), rms, max_abs);
  }
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "Write a checkpoint's MLP tensors as GGUF in f16, bf16, q8_0 or q4_0");
  auto o = std::make_shared<QuantizeOptions>();
  cmd->add_option("input", o->input, "checkpoint: safetensors, model.safetensors.index.json, GGUF, or a folder")
      ->required()->check(CLI::ExistingPath);
  cmd->add_option("output", o->output, "GGUF file to write (atomically)")->required();
  cmd->add_option("--type", o->type, "weight type: q8_0, q4_0, bf16, f16 (or f32)")->required();
  auto* layer = cmd->add_option("--layer", o->layer, "the layer to write")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_flag("--all-layers", o->all_layers, "write every layer's MLP")->excludes(layer);
  cmd->add_option("--variant", o->variant, "the block's variant, when the checkpoint does not say its activation");
  cmd->add_option("--tokens", o->tokens, "random tokens for the error measurement")->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->callback([o] { run_quantize(*o); });
}

}  // namespace ffn::cli
