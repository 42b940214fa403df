#include "lib/report/markdown_report.h"
namespace nvdet {
std::string render_markdown_report(const AuditResult& result) {
  return "# nvdet audit: " + result.scenario.name + (result.summary.passed ? " PASS\n" : " FAIL\n");
}
}  // namespace nvdet
