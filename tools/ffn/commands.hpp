// The ffn command's subcommands: each file registers one on the app and runs it by calling
// the library. Errors are thrown as ffn::Error and printed by main().
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace ffn::cli {

void add_params_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_forward_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_types_command(CLI::App& app);

// The seeds' table and the derivation of both hidden sizes (ffn params; the demo's start).
void print_params_table(int64_t d, int64_t multiple);

}  // namespace ffn::cli
