// ffn forward: y = block(x) for a block read from a safetensors file, x and y as .npy.
#include <chrono>
#include <cstdio>

#include "commands.hpp"
#include "ffn/block.hpp"
#include "ffn/checkpoint.hpp"
#include "ffn/error.hpp"
#include "ffn/isa.hpp"
#include "ffn/npy.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::cli {
namespace {

struct ForwardOptions {
  std::string variant;
  std::string weights;
  std::string input;
  std::string output;
  int threads = ThreadPool::default_threads();
  bool quiet = false;
};

void run_forward(const ForwardOptions& o) {
  const Variant variant = parse_variant(o.variant);
  ThreadPool pool(o.threads);
  const Block block = load_block_safetensors(o.weights, variant);
  const int64_t D = block.config().d_model;

  NpyArray x = read_npy(o.input);
  // [T, D] tokens, or a single token [D].
  if (x.shape.size() != 1 && x.shape.size() != 2)
    throw Error(o.input + ": expected an array of shape [T, " + std::to_string(D) + "] or [" + std::to_string(D) +
                "], got " + std::to_string(x.shape.size()) + " dimensions");
  const int64_t cols = x.shape.back();
  const int64_t T = x.shape.size() == 2 ? x.shape[0] : 1;
  if (cols != D)
    throw Error(o.input + ": tokens have " + std::to_string(cols) + " features but the block in " + o.weights +
                " has d_model " + std::to_string(D));

  AlignedFloats y(T * D);
  const auto start = std::chrono::steady_clock::now();
  block.forward({x.data.data(), T, D, D}, {y.data(), T, D, D}, &pool);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  write_npy(o.output, x.shape, y.data());
  if (!o.quiet)
    std::printf("%s d_model %lld hidden %lld%s: %lld token%s in %.3f ms (%d threads, %s) → %s\n",
                variant_name(variant).c_str(), static_cast<long long>(D),
                static_cast<long long>(block.config().hidden), block.config().bias ? " bias" : "",
                static_cast<long long>(T), T == 1 ? "" : "s", ms, o.threads,
                std::string(isa_name(active_isa())).c_str(), o.output.c_str());
}

}  // namespace

void add_forward_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("forward", "Run a block from a safetensors file on tokens from a .npy file");
  auto o = std::make_shared<ForwardOptions>();
  cmd->add_option("--variant", o->variant, "the block's variant: relu, gelu, gelu_tanh, swish, glu, bilinear, reglu, "
                                           "geglu, swiglu, or gated_<activation>")->required();
  cmd->add_option("--weights", o->weights, "safetensors file with gate.weight (gated variants), up.weight, "
                                           "down.weight and optional .bias of each")->required()->check(CLI::ExistingFile);
  cmd->add_option("--input", o->input, ".npy float32 array [T, d_model] (or [d_model])")->required()->check(CLI::ExistingFile);
  cmd->add_option("--output", o->output, ".npy file to write, same shape as the input")->required();
  cmd->add_option("--threads", o->threads, "worker threads (default: the cores this process may use)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "print nothing on success");
  cmd->footer("The instruction set is chosen at run time; FFN_ISA=scalar|avx2|avx512 forces one.");
  cmd->callback([o] { run_forward(*o); });
}

}  // namespace ffn::cli
