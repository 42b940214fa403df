#pragma once
// What nvdet audit and nvdet probe do with each scenario's result once it is known: the console
// summary (one line with --quiet), the reports in --report-dir, and the CI job summary and
// annotations (lib/report/ci_output.h).
#include <string>
#include <vector>

#include "lib/report/report_writers.h"
#include "lib/runner/audit_result.h"

namespace nvdet::cli {

void print_and_write_result(const AuditResult& result, const std::string& report_dir,
                            const std::vector<const ReportWriter*>& formats, bool quiet);

}  // namespace nvdet::cli
