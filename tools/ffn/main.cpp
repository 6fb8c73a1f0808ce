// ffn — command-line front of ffn.cpp. One file per subcommand; cli.cpp dispatches.
#include "cli.hpp"

int main(int argc, char** argv) { return ffn::cli::run_cli(argc, argv); }
