#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the CLI11 app: it adds its
// options and returns the action main() runs after parsing. Actions return the process exit
// code; nvdet::Error thrown from them is turned into a message and its code by main().
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "lib/backend/backend.h"

namespace nvdet::cli {

using Action = std::function<int()>;

Action add_audit_command(CLI::App& app);
Action add_bench_command(CLI::App& app);
Action add_info_command(CLI::App& app);
Action add_list_command(CLI::App& app);
Action add_diff_command(CLI::App& app);
Action add_bisect_command(CLI::App& app);
Action add_report_command(CLI::App& app);
Action add_probe_command(CLI::App& app);

// One backend's row of the support table: {"supports": {op: [dtypes]}, "available": bool,
// "unavailable_reason": why not on this machine} (tools/backend_table.cpp).
nlohmann::ordered_json backend_support_json(const BackendRegistration& r,
                                            const DeviceFacts& device);

// The sentence for a parse error of subcommand `sub`: for an option it does not have, the option
// and the nearest one it has ("unknown option '--fliter' (did you mean '--filter'?)"), else
// CLI11's own message (tools/option_hint.cpp).
std::string option_error(const CLI::App& sub, const CLI::ParseError& e, int argc, char** argv);

// The sentence for an option given an empty value ("--verify needs a value, got an empty one"),
// "" when none was: an empty value would switch the option off, and a CI step whose variable is
// unset would then check less than it asks for (tools/option_hint.cpp).
std::string empty_option_value(const CLI::App& sub);

}  // namespace nvdet::cli
