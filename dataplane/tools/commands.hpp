// Subcommands of `insert-dp`. Each parses its own options from argv (argv[0] is the
// subcommand name) and returns the process exit status: 0 success, 2 bad input or options
// (one line on stderr naming the file or option), 1 a runtime failure.
#pragma once

namespace insert::tools {

int run_decode(int argc, char** argv);
int run_replay(int argc, char** argv);
int run_inline(int argc, char** argv);
int run_monitor(int argc, char** argv);
int run_bench(int argc, char** argv);

}  // namespace insert::tools
