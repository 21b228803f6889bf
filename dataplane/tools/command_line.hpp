// Command-line handling shared by insert-dp's commands: the pipeline commands' (replay,
// inline, monitor, bench) own options, then `--`, then EAL options; CLI11 errors, --help and
// --version the same way in every command, decode's too.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "dataplane/common/version.hpp"

namespace insert::tools {

// argv[1..] up to a `--` go to `args`, everything after it to `eal_args`.
inline void split_eal_args(int argc, char** argv, std::vector<std::string>& args,
                           std::vector<std::string>& eal_args) {
    int i = 1;
    for (; i < argc && std::string(argv[i]) != "--"; ++i) args.emplace_back(argv[i]);
    for (++i; i < argc; ++i) eal_args.emplace_back(argv[i]);
}

// Parses `args` into `app`. 0 parsed, 1 --help or --version printed (stdout), 2 error printed
// (one line on stderr naming the command). Every subcommand reports the version of insert-dp.
inline int parse_args(CLI::App& app, std::vector<std::string> args, const char* name) {
    app.set_version_flag("--version", version_with_schema("insert-dp"),
                         "print the version (and the records' schema) and exit");
    try {
        std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
        app.parse(args);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return 1;
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 1;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "%s: %s (try --help)\n", name, e.what());
        return 2;
    }
    return 0;
}

}  // namespace insert::tools
