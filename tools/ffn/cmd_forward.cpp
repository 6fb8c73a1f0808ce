// ffn forward: y = layer(x) for a layer read from a checkpoint (dense or a mixture of
// experts, Checkpoint::load_layer), x and y as .npy.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "across_processes.hpp"
#include "commands.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/distributed.hpp"
#include "ffn/error.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/isa.hpp"
#include "ffn/thread_pool.hpp"
#include "forward_input.hpp"
#include "io/npy.hpp"
#include "sparsity_file.hpp"

namespace ffn::cli {
namespace {

struct ForwardOptions {
  std::string variant;
  std::string weights;
  int64_t layer = 0;
  std::string dtype;
  std::string input;
  std::string output;
  int threads = ThreadPool::default_threads();
  bool quiet = false;
  std::string sparse = "auto";                    // --sparse
  std::optional<double> calibrate_sparsity;       // --calibrate-sparsity S
  std::optional<double> calibrate_down_sparsity;  // --calibrate-down-sparsity P
};

// --sparse as LoadOptions::sparse: auto (nullopt: the loader's default), off, exact, a
// threshold, or calibrated (the layer's entry of ffn-sparsity.json beside the weights).
std::optional<SparseDecode> sparse_option(const ForwardOptions& o) {
  if (o.sparse == "auto") return std::nullopt;
  if (o.sparse == "off") return SparseDecode{};
  if (o.sparse == "exact") return SparseDecode{.enabled = true};
  if (o.sparse == "calibrated") {
    const SparsityEntry e = read_sparsity_entry(o.weights, o.layer);
    return SparseDecode{.enabled = true,
                        .threshold = e.threshold,
                        .down_threshold = e.down_threshold,
                        .down_kept_share = e.down_kept_share};
  }
  try {
    size_t used = 0;
    const float t = std::stof(o.sparse, &used);
    if (used == o.sparse.size() && std::isfinite(t) && t >= 0) return SparseDecode{.enabled = true, .threshold = t};
  } catch (const std::exception&) {
  }
  throw Error("--sparse '" + o.sparse + "': give auto, off, exact, calibrated or a threshold ≥ 0");
}

// --calibrate-sparsity S: the threshold that drops a share S of the layer's hidden channels
// on the input tokens (sparsity_threshold over hidden_activations), and with
// --calibrate-down-sparsity P the down threshold that drops P by |h| alone (over
// hidden_values) and the share of the gate's kept channels down then reads too
// (SparseDecode::down_kept_share), written to ffn-sparsity.json beside the weights; returns
// the sparse decode.
SparseDecode calibrate(const ForwardOptions& o, const Layer& layer, ConstMatrixView x, ThreadPool& pool) {
  const InferenceBlock& block = layer.dense();
  Matrix a(x.rows, block.config().hidden);
  block.hidden_activations(x, a.view(), &pool);
  SparsityEntry e{sparsity_threshold(a.view(), *o.calibrate_sparsity), *o.calibrate_sparsity, x.rows, o.input};
  if (o.calibrate_down_sparsity) {
    if (!block.config().variant.gated)
      throw Error("--calibrate-down-sparsity: layer " + std::to_string(o.layer) +
                  " is a 2-matrix block, whose h is the activation --calibrate-sparsity judges already");
    Matrix h(x.rows, block.config().hidden);
    block.hidden_values(x, h.view(), &pool);
    e.down_threshold = sparsity_threshold(h.view(), *o.calibrate_down_sparsity);
    e.down_target = *o.calibrate_down_sparsity;
    e.down_kept_share = down_kept_share(a.view(), h.view(), e.threshold, e.down_threshold);
  }
  write_sparsity_entry(o.weights, o.layer, e);
  if (!o.quiet) {
    std::printf("layer %lld: threshold %.6g drops %.1f%% of hidden channels on %lld tokens",
                static_cast<long long>(o.layer), double(e.threshold), 100.0 * e.target, static_cast<long long>(x.rows));
    if (o.calibrate_down_sparsity)
      std::printf(
          "; down threshold %.6g drops %.1f%% by |h| alone from down, which reads %.1f%% of the channels "
          "the gate keeps",
          double(e.down_threshold), 100.0 * e.down_target, 100.0 * e.down_kept_share);
    std::printf(" → %s\n", sparsity_file_for(o.weights).c_str());
  }
  return SparseDecode{.enabled = true,
                      .threshold = e.threshold,
                      .down_threshold = e.down_threshold,
                      .down_kept_share = e.down_kept_share};
}

void run_forward(const ForwardOptions& o) {
  if (launched_with_several_processes())  // under mpirun: the block split across the processes
  {
    if (o.sparse != "auto" || o.calibrate_sparsity)
      throw Error("--sparse and --calibrate-sparsity run one process's block; not under mpirun");
    return run_forward_across_processes(
        {o.weights, o.variant, o.dtype, o.input, o.output, o.layer, o.threads, o.quiet});
  }
  // Each matrix runs in the type the file stores it in, laid once into the forward
  // kernels' panels; --dtype converts (a matrix already stored so is used as it is). A
  // token's output is the same whatever else is in the file of tokens.
  LoadOptions load;
  load.layer = o.layer;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  if (!o.dtype.empty()) load.type = parse_weight_type(o.dtype);
  if (o.calibrate_sparsity && o.sparse != "auto")
    throw Error("--calibrate-sparsity sets the sparse decode it calibrates; leave out --sparse");
  if (o.calibrate_down_sparsity && !o.calibrate_sparsity)
    throw Error("--calibrate-down-sparsity calibrates beside --calibrate-sparsity; give both");
  load.sparse = sparse_option(o);
  ThreadPool pool(o.threads);
  const Checkpoint checkpoint(o.weights);
  Layer layer = checkpoint.load_layer(load, &pool);  // dense or a mixture of experts
  const int64_t D = layer.d_model();
  const auto [x, T] = read_tokens(o.input, D);
  if (o.calibrate_sparsity) {
    if (layer.is_moe())
      throw Error("--calibrate-sparsity: layer " + std::to_string(o.layer) + " is a mixture of experts");
    load.sparse = calibrate(o, layer, {x.data.data(), T, D, D}, pool);
    layer = checkpoint.load_layer(load, &pool);
  }
  AlignedFloats y(T * D);
  const auto start = std::chrono::steady_clock::now();
  layer.forward({x.data.data(), T, D, D}, {y.data(), T, D, D}, &pool);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  write_npy(o.output, x.shape, y.data());
  if (!o.quiet)
    std::printf("%s: %lld token%s in %.3f ms (%d threads, %s) → %s\n", layer.summary().c_str(),
                static_cast<long long>(T), T == 1 ? "" : "s", ms, o.threads,
                std::string(isa_name(active_isa())).c_str(), o.output.c_str());
}

}  // namespace

void add_forward_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "forward", "Run one layer's MLP of a checkpoint (safetensors, sharded, GGUF) on tokens from a .npy file");
  auto o = std::make_shared<ForwardOptions>();
  cmd->add_option("--weights", o->weights,
                  "checkpoint: a safetensors file, a model.safetensors.index.json, a GGUF "
                  "file, or a folder holding one")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--layer", o->layer, "which layer's MLP to run")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype,
                  "run every matrix in this weight type (`ffn types`: f32, bf16, f16, q8_0, q4_0); a "
                  "matrix the file already stores in it is used as it is, never re-quantised, any other "
                  "is converted (--dtype f32 widens). Default: each matrix in the type the file stores "
                  "(a q8_0 GGUF runs as q8_0, a bf16 safetensors file as bf16). q8_0 / q4_0 quantise the "
                  "activations to q8_0; accuracy contract per type in the README");
  cmd->add_option("--variant", o->variant,
                  "relu, gelu, gelu_tanh, swish, glu, bilinear, reglu, geglu, swiglu, swiglu_oai or "
                  "gated_<activation>; needed when no config.json (or GGUF metadata) says "
                  "the activation, checked against it when one does");
  cmd->add_option("--input", o->input, ".npy float32 array [T, d_model] (or [d_model])")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--output", o->output, ".npy file to write, same shape as the input")->required();
  cmd->add_option("--threads", o->threads, "worker threads (default: the cores this process may use)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "print nothing on success");
  cmd->add_option(
         "--sparse", o->sparse,
         "activation-sparse decode of a dense layer (one token a call — auto: Gemma 3n's sparse layers up to "
         "4 — hidden channels whose activated gate is small skip their up row and down column): auto (on, "
         "exact, where the activation makes zeros — ReLU, ReGLU, relu2, relu6, Gemma 3n's sparse layers — "
         "and up and down are f32/f16/bf16), off, exact, calibrated (the threshold in ffn-sparsity.json "
         "beside the weights, and its down threshold if it has one), or a threshold on |act(gate)|. A threshold "
         "changes the output; up and down "
         "are held a second time, as rows (a block type's as q8_0 rows along d_model, within half a q8_0 "
         "step of the file's values: exact and calibrated take them, auto does not)")
      ->capture_default_str();
  cmd->add_option("--calibrate-sparsity", o->calibrate_sparsity,
                  "the share S in [0, 1) of hidden channels to drop: the threshold that drops it on --input's "
                  "tokens is written to ffn-sparsity.json beside the weights (the checkpoint is not changed), "
                  "and the forward runs with it")
      ->check(CLI::Range(0.0, 0.999999));
  cmd->add_option("--calibrate-down-sparsity", o->calibrate_down_sparsity,
                  "with --calibrate-sparsity, gated layers: also the down threshold that drops a share P in [0, 1) "
                  "of channels by |h| = |act(gate)·up| alone; of the channels the gate keeps, those at or below it "
                  "then skip their down row too (their up row was read), written beside the first with the share of "
                  "the gate's kept channels down still reads, by which a token's bytes are judged for the sparse path")
      ->check(CLI::Range(0.0, 0.999999));
  cmd->footer(
      "Tensor names are detected: the seeds' gate/up/down, Hugging Face model.layers.N.mlp.*_proj, Meta "
      "layers.N.feed_forward.w1/w3/w2, GPT-2 h.N.mlp.c_fc/c_proj (Conv1D), GGUF blk.N.ffn_*.\n"
      "A mixture-of-experts layer (Mixtral block_sparse_moe.*, Hugging Face mlp.gate + mlp.experts.* or the fused "
      "3-D experts.gate_up_proj, GGUF ffn_gate_inp + ffn_*_exps) runs as one: the routing rule from config.json "
      "beside the weights or the GGUF metadata, only the chosen experts read per token.\n"
      "The instruction set is chosen at run time; FFN_ISA=" +
      isa_names("|") + " forces one.");
  cmd->callback([o] { run_forward(*o); });
}

}  // namespace ffn::cli
