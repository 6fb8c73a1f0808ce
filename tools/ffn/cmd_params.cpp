// ffn params: the seeds' parameter table — a GELU MLP (hidden 4·d) against SwiGLU (hidden
// 8/3·d rounded up) at the same d — and how each hidden size is derived.
#include <cstdio>

#include "commands.hpp"
#include "ffn/accounting.hpp"
#include "ffn/config.hpp"
#include "format.hpp"

namespace ffn::cli {
namespace {

struct Row {
  const char* name;
  BlockConfig config;
  HiddenDerivation derivation;
};

Row make_row(const char* name, Variant v, int64_t d, std::optional<int64_t> multiple) {
  BlockSpec spec{v, d, std::nullopt, {}, false};
  if (v.gated) spec.rule.multiple_of = multiple;
  return {name, resolve(spec), derive_hidden(spec)};
}

}  // namespace

void print_params_table(int64_t d, int64_t multiple) {
  const Row rows[] = {make_row("GELU MLP", {false, Activation::gelu}, d, std::nullopt),
                      make_row("SwiGLU", {true, Activation::swish}, d, multiple)};
  for (const auto& r : rows)
    std::printf("%-9s parameters %s\n", r.name, grouped(account(r.config).parameters).c_str());
  std::printf("\n");
  for (const auto& r : rows)
    std::printf("%-9s hidden %-6lld %lld matrices of %lld × %lld   (%s)\n", r.name,
                static_cast<long long>(r.config.hidden), static_cast<long long>(r.config.matrices()),
                static_cast<long long>(d), static_cast<long long>(r.config.hidden), r.derivation.text.c_str());
  const double ratio = static_cast<double>(account(rows[1].config).parameters) /
                       static_cast<double>(account(rows[0].config).parameters);
  std::printf("\nSwiGLU / GELU MLP parameters: %s — a third matrix, paid for by a hidden width of %s of GELU's.\n",
              fixed(ratio, 4).c_str(),
              fixed(static_cast<double>(rows[1].config.hidden) / static_cast<double>(rows[0].config.hidden), 3).c_str());
}

void add_params_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("params", "The seeds' table: parameters of a GELU MLP and of SwiGLU at width d");
  auto d = std::make_shared<int64_t>(4096);
  auto multiple = std::make_shared<int64_t>(256);
  cmd->add_option("--d", *d, "model width d_model")->capture_default_str();
  cmd->add_option("--multiple", *multiple, "SwiGLU's hidden size is rounded up to a multiple of this")
      ->capture_default_str();
  cmd->callback([d, multiple] { print_params_table(*d, *multiple); });
}

}  // namespace ffn::cli
