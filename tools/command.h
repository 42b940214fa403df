#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the CLI11 app: it adds its
// options and returns the action main() runs after parsing. Actions return the process exit
// code; nvdet::Error thrown from them is turned into a message and its code by main().
#include <CLI/CLI.hpp>
#include <functional>

namespace nvdet::cli {

using Action = std::function<int()>;

Action add_audit_command(CLI::App& app);
Action add_bench_command(CLI::App& app);
Action add_info_command(CLI::App& app);
Action add_list_command(CLI::App& app);
Action add_diff_command(CLI::App& app);
Action add_bisect_command(CLI::App& app);
Action add_report_command(CLI::App& app);

}  // namespace nvdet::cli
