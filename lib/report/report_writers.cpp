#include "lib/report/report_writers.h"

#include <cctype>
#include <string>
#include <system_error>

#include "lib/core/error.h"
#include "lib/core/atomic_file.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report.h"
#include "lib/report/junit_report.h"
#include "lib/report/markdown_report.h"
#include "lib/report/verify_report.h"

namespace nvdet {
namespace {

// The verify report is json's companion, written only when there is a verification.
class VerifyWriter final : public FunctionWriter<ReportWriter> {
 public:
  using FunctionWriter::FunctionWriter;
  bool needs_verify() const override { return true; }
};

// The verification alone, as the JSON report's `verify` object: what a CI step reads to see
// which hashes moved without parsing the whole report.
std::string render_verify_report(const AuditResult& result) {
  return verify_to_json(*result.verify).dump(2) + "\n";
}

FormatRegistry<ReportWriter>& registry() {
  static FormatRegistry<ReportWriter> all = [] {
    FormatRegistry<ReportWriter> r("report");
    using W = FunctionWriter<ReportWriter>;
    r.add(std::make_unique<W>(W::Facts{"md", ".md", "Markdown, for CI job summaries", {"markdown"}},
                              render_markdown_report));
    r.add(std::make_unique<W>(
        W::Facts{"json", ".json", "the whole result, for machines (nvdet report reads it)"},
        render_json_report));
    r.add(std::make_unique<W>(
        W::Facts{"junit", ".junit.xml", "JUnit XML, one test case per backend", {"xml"}},
        render_junit_report));
    r.add(std::make_unique<W>(W::Facts{"html", ".html", "one self-contained page"},
                              render_html_report));
    r.add(std::make_unique<VerifyWriter>(
        W::Facts{"verify", ".verify.json", "the --verify comparison alone", {}, "json"},
        render_verify_report));
    return r;
  }();
  return all;
}

}  // namespace

const FormatRegistry<ReportWriter>& report_format_registry() { return registry(); }

const std::vector<std::unique_ptr<ReportWriter>>& report_writers() { return registry().writers(); }

const ReportWriter* find_report_writer(std::string_view name) { return registry().find(name); }

void register_report_writer(std::unique_ptr<ReportWriter> writer) {
  registry().add(std::move(writer));
}

std::string report_format_names() { return registry().names(); }

std::string report_formats_help() { return registry().help(); }

std::vector<const ReportWriter*> parse_report_formats(const std::string& csv) {
  return registry().parse(csv);
}

std::vector<const ReportWriter*> writers_with_companions(
    const std::vector<const ReportWriter*>& selected) {
  return registry().with_companions(selected);
}

std::string report_base_name(const AuditResult& result) {
  if (result.shard) {
    return report_base_name(result.scenario.name, result.shard->index, result.shard->count);
  }
  return report_base_name(result.scenario.name);
}

std::string report_base_name(const std::string& scenario_name, int shard_index, int shard_count) {
  return report_base_name(scenario_name) + ".shard-" + std::to_string(shard_index) + "-of-" +
         std::to_string(shard_count);
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
                                                 const std::vector<const ReportWriter*>& formats) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw_input_error("cannot write report '" + dir.string() + "': " + ec.message());
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw_input_error("cannot write report '" + dir.string() + "': not a directory");
  }
  const std::string base = report_base_name(result);
  // All or nothing: every format is on disk under a temporary name before any report is
  // replaced, so a disk that fills half-way leaves the previous set whole.
  AtomicFileSet set;
  for (const ReportWriter* w : writers_with_companions(formats)) {
    if (w->needs_verify() && !result.verify) continue;
    set.stage(dir / (base + std::string(w->extension())), w->render(result), "report");
  }
  return set.commit();
}

}  // namespace nvdet
