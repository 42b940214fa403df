// nvdet report AUDIT.json...: render the Markdown, HTML, JUnit (and JSON) reports again from JSON
// audit reports, with this build's writers, without running anything. Reports made on a GPU
// machine are re-rendered anywhere after a writer changes.
#include <fmt/format.h>

#include "lib/core/error.h"
#include "lib/core/atomic_file.h"
#include "lib/report/json_report_reader.h"
#include "lib/report/report_writers.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> inputs;
  std::string report_dir;
  std::string formats = "md,html";
};

int run(const ReportFlags& f) {
  const std::vector<const ReportWriter*> formats = parse_report_formats(f.formats);
  std::vector<AuditResult> results;
  for (const std::string& path : f.inputs) results.push_back(read_audit_report(path));
  prepare_output_dir(f.report_dir, "report");
  for (const AuditResult& r : results) {
    for (const ReportWriter* w : writers_with_companions(formats)) {
      if (w->needs_verify() && !r.verify) continue;
      check_output_file(std::filesystem::path(f.report_dir) /
                            (report_base_name(r) + std::string(w->extension())),
                        "report");
    }
  }
  bool all_passed = true;
  for (const AuditResult& r : results) {
    for (const auto& written : write_reports(r, f.report_dir, formats)) {
      fmt::print("report: {}\n", written.string());
    }
    all_passed = all_passed && r.summary.passed;
  }
  // The exit code restates the reports' verdict, as the audit that made them did.
  return static_cast<int>(all_passed ? ExitCode::kOk : ExitCode::kExpectationFailed);
}

}  // namespace

Action add_report_command(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Render reports again from JSON audit reports (no backend runs)");
  cmd->add_option("audit_json", flags->inputs, "JSON audit reports (nvdet audit --format json)")
      ->required();
  cmd->add_option("--report-dir", flags->report_dir, "Write the reports into this folder")
      ->required();
  cmd->add_option("--format", flags->formats,
                  "Report formats, comma separated: " + report_formats_help())
      ->capture_default_str();
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
