// nvdet audit SCENARIO...: run every context of each scenario through its backends, compare the
// probed requests' outputs bit for bit, and exit 0 only if every expectation held.
#include <fmt/format.h>

#include <filesystem>

#include "lib/report/console_summary.h"
#include "lib/report/report_writers.h"
#include "lib/runner/audit.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct AuditFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string report_dir;
  std::string formats = "md,json";
  std::string filter;
  bool quiet = false;
};

int run(const AuditFlags& f) {
  const std::vector<ReportFormat> formats = parse_report_formats(f.formats);
  bool all_passed = true;
  for (const std::string& path : f.scenarios) {
    const Scenario s = load_scenario(path);
    AuditOptions opts;
    opts.backends = f.backends;
    opts.context_filter = f.filter;
    TerminalProgress progress(stderr);
    if (!f.quiet) {
      opts.on_progress = [&](const AuditProgress& p) {
        progress.update(p.done, p.total, p.backend, p.context);
      };
    }
    const AuditResult result = run_audit(s, opts);
    progress.finish();
    if (f.quiet) {
      fmt::print("{}: audit {}\n", s.name, result.summary.passed ? "PASSED" : "FAILED");
    } else {
      fmt::print("{}", render_console_summary(result));
    }
    if (!f.report_dir.empty()) {
      for (const auto& written : write_reports(result, f.report_dir, formats)) {
        if (!f.quiet) fmt::print("report: {}\n", written.string());
      }
    }
    all_passed = all_passed && result.summary.passed;
  }
  return static_cast<int>(all_passed ? ExitCode::kOk : ExitCode::kExpectationFailed);
}

}  // namespace

Action add_audit_command(CLI::App& app) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "Run scenarios and check every backend's expectation (exit 0 pass, 1 fail)");
  cmd->add_option("scenario", flags->scenarios, "Scenario YAML files")->required();
  cmd->add_option("--backends", flags->backends, "Run only these backends (comma separated)")
      ->delimiter(',');
  cmd->add_option("--report-dir", flags->report_dir, "Write reports into this folder");
  cmd->add_option("--format", flags->formats, "Report formats: md,json,junit,html")
      ->capture_default_str();
  cmd->add_option("--filter", flags->filter, "Run only contexts whose id matches this regex");
  cmd->add_flag("--quiet", flags->quiet, "Print one line per scenario");
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
