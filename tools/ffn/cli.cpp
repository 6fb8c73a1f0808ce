// run_cli: registers every subcommand on one CLI11 app, parses, runs, and turns errors into
// exit statuses.
#include "cli.hpp"

#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "ffn/error.hpp"
#include "ffn/version.hpp"

namespace ffn::cli {

int run_cli(int argc, char** argv) {
  CLI::App app{"ffn — the feed-forward (MLP) block of transformers: GELU MLP, SwiGLU and the GLU family"};
  app.set_version_flag("--version", std::string("ffn ") + ffn::version);
  app.require_subcommand(1, 1);
  add_params_command(app);
  add_info_command(app);
  add_forward_command(app);
  add_quantize_command(app);
  add_bench_command(app);
  add_demo_command(app);
  add_compare_command(app);
  add_types_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ffn::Error& e) {
    std::fprintf(stderr, "ffn: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ffn: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace ffn::cli
