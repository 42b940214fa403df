#include "lib/report/report_writers.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "lib/core/error.h"
#include "lib/core/atomic_file.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report.h"
#include "lib/report/junit_report.h"
#include "lib/report/markdown_report.h"

namespace nvdet {
namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string_view report_format_name(ReportFormat f) {
  switch (f) {
    case ReportFormat::kMarkdown: return "md";
    case ReportFormat::kJson: return "json";
    case ReportFormat::kJunit: return "junit";
    case ReportFormat::kHtml: return "html";
  }
  return "?";
}

std::string_view report_file_extension(ReportFormat f) {
  switch (f) {
    case ReportFormat::kMarkdown: return ".md";
    case ReportFormat::kJson: return ".json";
    case ReportFormat::kJunit: return ".junit.xml";
    case ReportFormat::kHtml: return ".html";
  }
  return "";
}

std::vector<ReportFormat> parse_report_formats(const std::string& csv) {
  std::vector<ReportFormat> formats;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    const std::string name = lower(trim(std::string_view(csv).substr(start, comma - start)));
    start = comma + 1;
    if (name.empty()) continue;  // tolerate "md,,json" and a trailing comma
    ReportFormat f;
    if (name == "md" || name == "markdown") {
      f = ReportFormat::kMarkdown;
    } else if (name == "json") {
      f = ReportFormat::kJson;
    } else if (name == "junit" || name == "xml") {
      f = ReportFormat::kJunit;
    } else if (name == "html") {
      f = ReportFormat::kHtml;
    } else {
      throw_input_error("unknown report format '" + name +
                        "' (known formats: md, json, junit, html)");
    }
    if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  }
  if (formats.empty()) {
    throw_input_error("no report format given (known formats: md, json, junit, html)");
  }
  return formats;
}

std::string render_report(const AuditResult& result, ReportFormat format) {
  switch (format) {
    case ReportFormat::kMarkdown: return render_markdown_report(result);
    case ReportFormat::kJson: return render_json_report(result);
    case ReportFormat::kJunit: return render_junit_report(result);
    case ReportFormat::kHtml: return render_html_report(result);
  }
  return "";
}

std::string report_base_name(const AuditResult& result) {
  return report_base_name(result.scenario.name);
}

std::string report_base_name(const std::string& scenario_name) {
  std::string name = scenario_name;
  for (char& c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) c = '-';
  }
  // A name made only of dots would be "." or ".." (or hidden); do not write such files.
  if (name.empty() || name.find_first_not_of('.') == std::string::npos) name = "audit";
  return name;
}

std::vector<std::filesystem::path> write_reports(const AuditResult& result,
                                                 const std::filesystem::path& dir,
                                                 const std::vector<ReportFormat>& formats) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw_input_error("cannot write report '" + dir.string() + "': " + ec.message());
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw_input_error("cannot write report '" + dir.string() + "': not a directory");
  }
  const std::string base = report_base_name(result);
  std::vector<std::filesystem::path> written;
  for (const ReportFormat f : formats) {
    const std::filesystem::path path = dir / (base + std::string(report_file_extension(f)));
    write_file_atomic(path, render_report(result, f), "report");
    written.push_back(path);
  }
  return written;
}

}  // namespace nvdet
