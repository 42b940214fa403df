#include "lib/report/junit_report.h"
namespace nvdet {
std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}
std::string render_junit_report(const AuditResult& result) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" +
         xml_escape(result.scenario.name) + "\"></testsuites>\n";
}
}  // namespace nvdet
