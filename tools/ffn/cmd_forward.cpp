// ffn forward: y = layer(x) for a layer read from a checkpoint (dense or a mixture of
// experts, Checkpoint::load_layer), x and y as .npy.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "across_processes.hpp"
#include "commands.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/distributed.hpp"
#include "ffn/isa.hpp"
#include "ffn/thread_pool.hpp"
#include "forward_input.hpp"
#include "io/npy.hpp"

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
};

void run_forward(const ForwardOptions& o) {
  if (launched_with_several_processes())  // under mpirun: the block split across the processes
    return run_forward_across_processes({o.weights, o.variant, o.dtype, o.input, o.output, o.layer, o.threads, o.quiet});
  // Each matrix runs in the type the file stores it in, laid once into the forward
  // kernels' panels; --dtype converts (a matrix already stored so is used as it is). A
  // token's output is the same whatever else is in the file of tokens.
  LoadOptions load;
  load.layer = o.layer;
  if (!o.variant.empty()) load.variant = parse_variant(o.variant);
  if (!o.dtype.empty()) load.type = parse_weight_type(o.dtype);
  ThreadPool pool(o.threads);
  const Layer layer = Checkpoint(o.weights).load_layer(load, &pool);  // dense or a mixture of experts
  const int64_t D = layer.d_model();
  const auto [x, T] = read_tokens(o.input, D);
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
  cmd->footer(
      "Tensor names are detected: the seeds' gate/up/down, Hugging Face model.layers.N.mlp.*_proj, Meta "
      "layers.N.feed_forward.w1/w3/w2, GPT-2 h.N.mlp.c_fc/c_proj (Conv1D), GGUF blk.N.ffn_*.\n"
      "A mixture-of-experts layer (Mixtral block_sparse_moe.*, Hugging Face mlp.gate + mlp.experts.* or the fused "
      "3-D experts.gate_up_proj, GGUF ffn_gate_inp + ffn_*_exps) runs as one: the routing rule from config.json "
      "beside the weights or the GGUF metadata, only the chosen experts read per token.\n"
      "The instruction set is chosen at run time; FFN_ISA=" + isa_names("|") + " forces one.");
  cmd->callback([o] { run_forward(*o); });
}

}  // namespace ffn::cli
