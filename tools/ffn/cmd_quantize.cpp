// ffn quantize: a checkpoint's MLP tensors (one layer or all) written as GGUF in a chosen
// weight type, a type per matrix, or one of llama.cpp's mixes (Q4_K_M …, their MLP rules per
// layer), with each tensor's type, the rule that picked it, its size and its error, and the
// error the types cost the block, measured by reading the written file back and running it
// against the f32 block on random tokens.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "commands.hpp"
#include "core/quant_mix.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "ffn/save.hpp"
#include "format.hpp"
#include "io/gguf.hpp"

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

// What --type asks for: one type for every matrix, a type per matrix ("q4_K:q4_K:q6_K",
// gate:up:down), or a mix whose rules pick per layer.
struct TypeChoice {
  const QuantMix* mix = nullptr;
  MatrixTypes types;
};

TypeChoice parse_type_choice(const std::string& text) {
  TypeChoice c;
  if ((c.mix = find_quant_mix(text))) return c;
  const auto first = text.find(':'), last = text.rfind(':');
  if (first == std::string::npos) {
    c.types = MatrixTypes::all(parse_weight_type(text));
    return c;
  }
  if (first == last)
    throw Error("--type '" + text + "': a type per matrix is gate:up:down, three types (e.g. q4_K:q4_K:q6_K)");
  c.types = {parse_weight_type(text.substr(0, first)), parse_weight_type(text.substr(first + 1, last - first - 1)),
             parse_weight_type(text.substr(last + 1))};
  return c;
}

// The types of layer `layer` of `layers` and why.
MixChoice layer_types(const TypeChoice& c, int64_t layer, int64_t layers) {
  if (c.mix) return quant_mix_types(*c.mix, layer, layers);
  return {c.types, "--type"};
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

// Relative RMS error of the written tensor `name` against the original matrix m.
double tensor_error(const GgufFile& f, const std::string& name, const Matrix& m) {
  std::vector<float> back(static_cast<size_t>(m.size()));
  f.read_f32(name, back.data());
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < m.size(); ++i) {
    const double e = double(back[size_t(i)]) - double(m.data()[i]);
    err2 += e * e;
    ref2 += double(m.data()[i]) * double(m.data()[i]);
  }
  return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
}

std::string scientific(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2e", v);
  return s;
}

// One line per matrix of a written layer: name, type, the rule that picked it, bytes, error.
void print_tensors(const GgufFile& f, const Block& original, int64_t layer, const MixChoice& choice) {
  const auto& w = original.weights();
  const std::string p = "blk." + std::to_string(layer) + ".ffn_";
  auto line = [&](const char* matrix, const Matrix& m, WeightType t, const std::string& rule) {
    const std::string name = p + matrix + ".weight";
    std::printf("  %-24s %-5s %10s  relative RMS error %s  (%s)\n", name.c_str(),
                std::string(weight_type_name(t)).c_str(), megabytes(f.tensor(name).bytes).c_str(),
                scientific(tensor_error(f, name, m)).c_str(), rule.c_str());
  };
  if (original.config().variant.gated) line("gate", w.gate, choice.types.gate, choice.rule);
  line("up", w.up, choice.types.up, choice.rule);
  line("down", w.down, choice.types.down, choice.rule);
}

void run_quantize(const QuantizeOptions& o) {
  const TypeChoice choice = parse_type_choice(o.type);
  LoadOptions load;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  const Checkpoint input(o.input);
  const std::vector<int64_t> all = input.layers();
  const std::vector<int64_t> layers = o.all_layers ? all : std::vector<int64_t>{o.layer};
  if (layers.empty()) throw Error(o.input + ": no feed-forward block found");
  // A mix's rules count the model's layers, whichever are written.
  const int64_t layer_count = all.empty() ? 1 : all.back() + 1;
  std::vector<MixChoice> choices;

  const bool progress = isatty(fileno(stderr)) != 0;  // a progress line only on a terminal
  std::vector<Block> originals;
  int64_t f32_bytes = 0;
  for (int64_t layer : layers) {
    load.layer = layer;
    LoadedBlock loaded = input.load_trainable(load);
    const auto& c = loaded.block.config();
    if (!originals.empty() && !(c.variant == originals.front().config().variant))
      throw Error(o.input + ": layer " + std::to_string(layer) + " is " + variant_name(c.variant) + " but layer " +
                  std::to_string(layers.front()) + " is " + variant_name(originals.front().config().variant));
    choices.push_back(layer_types(choice, layer, layer_count));
    const MatrixTypes& types = choices.back().types;
    if (!weight_bytes(c, types)) {
      // Name the matrix whose rows are not whole blocks of its type.
      const bool up_ok = c.d_model % weight_type_info(types.up).block_elements == 0 &&
                         (!c.variant.gated || c.d_model % weight_type_info(types.gate).block_elements == 0);
      const WeightType bad =
          up_ok ? types.down : (c.d_model % weight_type_info(types.up).block_elements ? types.up : types.gate);
      throw Error(o.input + ": layer " + std::to_string(layer) + " cannot be stored as " +
                  matrix_types_name(types, c.variant.gated) + ": " +
                  (up_ok ? "down's rows (hidden " : "gate and up's rows (d_model ") +
                  std::to_string(up_ok ? c.hidden : c.d_model) + ") are not whole blocks of " +
                  std::to_string(weight_type_info(bad).block_elements) + " weights, as " +
                  std::string(weight_type_name(bad)) + " stores them");
    }
    f32_bytes += *weight_bytes(c, WeightType::f32);
    load.variant = c.variant;  // every layer must be the same block
    originals.push_back(std::move(loaded.block));
    if (progress) {
      std::fprintf(stderr, "\rread layer %lld of %zu", static_cast<long long>(layer), layers.size());
      std::fflush(stderr);
    }
  }
  const auto& first = originals.front().config();
  std::vector<LayerToSave> to_save;
  for (size_t i = 0; i < layers.size(); ++i) to_save.push_back({layers[i], &originals[i], choices[i].types});
  save_gguf(o.output, to_save,
            {.name = std::filesystem::path(o.input).filename().string() + " MLP (ffn quantize)", .quantization = o.type});
  const auto out_bytes = static_cast<int64_t>(std::filesystem::file_size(o.output));
  if (progress) std::fprintf(stderr, "\r%40s\r", "");
  const std::string as = choice.mix ? std::string(choice.mix->name) + " (" + std::string(choice.mix->summary) + ")"
                                    : matrix_types_name(choice.types, first.variant.gated);
  std::printf("%s: %zu layer%s of %s, as %s\n", o.output.c_str(), layers.size(), layers.size() == 1 ? "" : "s",
              variant_name(first.variant).c_str(), as.c_str());
  std::printf("size: %s of f32 weights and biases → %s file (%s of f32)\n", megabytes(f32_bytes).c_str(),
              megabytes(out_bytes).c_str(), fixed(double(out_bytes) / double(f32_bytes), 3).c_str());

  ThreadPool pool(o.threads);
  const Checkpoint written(o.output);
  const GgufFile file(o.output);
  for (size_t i = 0; i < layers.size(); ++i) {
    print_tensors(file, originals[i], layers[i], choices[i]);
    load.layer = layers[i];
    const Block stored = written.load_trainable(load).block;
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
  auto* cmd = app.add_subcommand(
      "quantize", "Write a checkpoint's MLP tensors as GGUF in a weight type, a type per matrix or a llama.cpp mix");
  auto o = std::make_shared<QuantizeOptions>();
  cmd->add_option("input", o->input, "checkpoint: safetensors, model.safetensors.index.json, GGUF, or a folder")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("output", o->output, "GGUF file to write (atomically)")->required();
  std::string mixes;
  for (const auto& m : quant_mixes()) mixes += (mixes.empty() ? "" : ", ") + std::string(m.name);
  cmd->add_option("--type", o->type,
                  "a weight type for every matrix (" + weight_type_names() +
                      "); a type per matrix, gate:up:down (q4_K:q4_K:q6_K); or a llama.cpp mix, whose rules pick "
                      "per layer (" +
                      mixes + "; q2_k is the mix: down q3_K — q2_K:q2_K:q2_K stores q2_K throughout)")
      ->required();
  auto* layer =
      cmd->add_option("--layer", o->layer, "the layer to write")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_flag("--all-layers", o->all_layers, "write every layer's MLP")->excludes(layer);
  cmd->add_option("--variant", o->variant, "the block's variant, when the checkpoint does not say its activation");
  cmd->add_option("--tokens", o->tokens, "random tokens for the error measurement")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "worker threads")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->callback([o] { run_quantize(*o); });
}

}  // namespace ffn::cli
