#pragma once
// The report writers' front door: which formats exist, how `--format md,json,junit,html` is
// parsed, and writing one audit's reports into a folder. Writers read only the result model
// (AuditResult); they know nothing about backends or kernels.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

enum class ReportFormat { kMarkdown, kJson, kJunit, kHtml };

std::string_view report_format_name(ReportFormat f);       // "md", "json", "junit", "html"
std::string_view report_file_extension(ReportFormat f);    // ".md", ".json", ".junit.xml", ".html"

// Parses a comma-separated list of format names ("md,json,junit,html"; "markdown" and "xml" are
// accepted as aliases of md and junit; spaces around names are ignored; duplicates collapse).
// Throws Error(kBadInput) naming the unknown format and the known ones, or for an empty list.
std::vector<ReportFormat> parse_report_formats(const std::string& csv);

// The report as text, in memory (what write_reports writes).
std::string render_report(const AuditResult& result, ReportFormat format);

// The base file name of an audit's reports: the scenario name with anything but letters, digits,
// '.', '_' and '-' replaced by '-' ("audit" when the name is empty).
std::string report_base_name(const AuditResult& result);
std::string report_base_name(const std::string& scenario_name);  // the same, from the name

// Creates `dir` (and its parents) and writes `<base>.md`, `<base>.json`, `<base>.junit.xml`,
// `<base>.html` for the requested formats, each atomically (see write_file_atomic). Returns the
// paths written, in the order of `formats`. Throws Error(kBadInput) "cannot write report '...':
// reason" when the folder cannot be created or a file cannot be written.
std::vector<std::filesystem::path> write_reports(const AuditResult& result,
                                                 const std::filesystem::path& dir,
                                                 const std::vector<ReportFormat>& formats);

}  // namespace nvdet
