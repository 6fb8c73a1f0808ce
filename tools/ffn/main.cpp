// ffn — command-line front of ffn.cpp. One file per subcommand; this one only dispatches.
#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "ffn/error.hpp"
#include "ffn/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ffn — the feed-forward (MLP) block of transformers: GELU MLP, SwiGLU and the GLU family"};
  app.set_version_flag("--version", std::string("ffn ") + ffn::version);
  app.require_subcommand(1, 1);
  ffn::cli::add_params_command(app);
  ffn::cli::add_info_command(app);
  ffn::cli::add_forward_command(app);
  ffn::cli::add_quantize_command(app);
  ffn::cli::add_bench_command(app);
  ffn::cli::add_demo_command(app);
  ffn::cli::add_compare_command(app);
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
