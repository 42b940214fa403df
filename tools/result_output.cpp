#include "tools/result_output.h"

#include <fmt/format.h>

#include "lib/report/ci_output.h"
#include "lib/report/console_summary.h"
#include "lib/report/report_text.h"

namespace nvdet::cli {

void print_and_write_result(const AuditResult& result, const std::string& report_dir,
                            const std::vector<const ReportWriter*>& formats, bool quiet) {
  const char* verdict = ran_nothing(result)     ? "RAN NOTHING"
                        : result.summary.passed ? "PASSED"
                                                : "FAILED";
  if (quiet) {
    fmt::print("{}: {} {}\n", result.scenario.name, report_text::command_name(result), verdict);
  } else {
    fmt::print("{}", render_console_summary(result));
  }
  if (!report_dir.empty()) {
    for (const auto& written : write_reports(result, report_dir, formats)) {
      if (!quiet) fmt::print("report: {}\n", written.string());
    }
  }
  publish_to_ci(result);
}

}  // namespace nvdet::cli
