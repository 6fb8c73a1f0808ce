// The ffn command as a function: main() calls it, and so does the CLI fuzz target, which
// drives it in-process with arbitrary argument lists.
#pragma once

namespace ffn::cli {

// Parses argv and runs the subcommand. Returns the process exit status: 0 on success, 1
// for an ffn::Error (printed to stderr), CLI11's status for a parse error or --help, 2 for
// any other exception.
int run_cli(int argc, char** argv);

}  // namespace ffn::cli
