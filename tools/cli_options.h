#pragma once
// Options whose parsing every subcommand shares, so that each reads its command line alike.
//
// List options take one value per occurrence (a comma-separated list, or the option repeated),
// never the words after it: `audit --backends cpu-variant scenario.yaml` leaves the scenario
// positional, as in every other subcommand.
//
// Numeric options are checked the same way in every subcommand: the whole text must be a number of
// the option's type inside its range, or parsing stops with exit 2 and one sentence naming the
// option and the range. CLI11's own conversion wraps "-1" into an unsigned type and does not
// refuse 2^64, so that "-1" would read as "no limit"; nothing numeric reaches a flag through it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/checked_parse.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/report_writers.h"

namespace nvdet::cli {

// A list option: `--NAME a,b` or `--NAME a --NAME b`; `delimiter` 0 for values that may hold
// commas themselves.
inline CLI::Option* add_list_option(CLI::App* cmd, const std::string& name,
                                    std::vector<std::string>& target, const std::string& help,
                                    char delimiter = ',') {
  CLI::Option* opt = cmd->add_option(name, target, help)->allow_extra_args(false);
  return delimiter ? opt->delimiter(delimiter) : opt;
}

// An integer option whose value must lie in [min, max]; `target` keeps its value when the option
// is absent (its default, shown by --help).
template <class T>
CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, T& target, T min, T max,
                                const std::string& help) {
  CLI::Option* opt = cmd->add_option_function<std::string>(
      name,
      [&target, name, min, max](const std::string& text) {
        const std::optional<T> v = parse_integer<T>(text);
        if (!v || *v < min || *v > max) {
          throw CLI::ValidationError(
              name, fmt::format("'{}' is not an integer from {} to {}", excerpt(text), min, max));
        }
        target = *v;
      },
      help);
  return opt->type_name("INT")->default_str(std::to_string(target));
}

// A finite decimal option (no "nan", "inf" or hex) of at least `min`.
inline CLI::Option* add_real_option(CLI::App* cmd, const std::string& name, double& target,
                                    double min, const std::string& help) {
  CLI::Option* opt = cmd->add_option_function<std::string>(
      name,
      [&target, name, min](const std::string& text) {
        const std::optional<double> v = parse_real(text);
        if (!v || *v < min) {
          throw CLI::ValidationError(
              name, fmt::format("'{}' is not a finite number of at least {}", excerpt(text), min));
        }
        target = *v;
      },
      help);
  return opt->type_name("FLOAT");
}

// The report and selection options nvdet audit and nvdet probe share: --report-dir, --format
// (the audit's writers), -k/--filter and -q/--quiet. Returns --format's option, whose count()
// says whether it was given (it needs --report-dir).
inline CLI::Option* add_report_options(CLI::App* cmd, std::string& report_dir, std::string& formats,
                                       std::string& filter, bool& quiet) {
  cmd->add_option("--report-dir", report_dir, "Write reports into this folder (created)");
  CLI::Option* format = cmd->add_option("--format", formats,
                                        "Report formats, comma separated (needs --report-dir): " +
                                            report_formats_help())
                            ->capture_default_str();
  cmd->add_option("-k,--filter", filter, "Run only contexts whose id matches this regex");
  cmd->add_flag("-q,--quiet", quiet, "Print one line per scenario");
  return format;
}

}  // namespace nvdet::cli
