#include "lib/report/report_writers.h"

#include <absl/strings/ascii.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <system_error>

#include "lib/core/error.h"
#include "lib/core/atomic_file.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report.h"
#include "lib/report/junit_report.h"
#include "lib/report/markdown_report.h"
#include "lib/report/verify_report.h"

namespace nvdet {
namespace {

using RenderFn = std::string (*)(const AuditResult&);

// A writer made of its facts and a render function: how the built-in formats are registered.
class FunctionWriter final : public ReportWriter {
 public:
  struct Facts {
    std::string_view name, extension, description;
    std::vector<std::string_view> aliases = {};
    std::string_view written_with = {};
    bool needs_verify = false;
  };
  FunctionWriter(Facts facts, RenderFn render) : f_(std::move(facts)), render_(render) {}
  std::string_view name() const override { return f_.name; }
  std::string_view extension() const override { return f_.extension; }
  std::string_view description() const override { return f_.description; }
  std::vector<std::string_view> aliases() const override { return f_.aliases; }
  std::string_view written_with() const override { return f_.written_with; }
  bool needs_verify() const override { return f_.needs_verify; }
  std::string render(const AuditResult& result) const override { return render_(result); }

 private:
  Facts f_;
  RenderFn render_;
};

// The verification alone, as the JSON report's `verify` object: what a CI step reads to see
// which hashes moved without parsing the whole report.
std::string render_verify_report(const AuditResult& result) {
  return verify_to_json(*result.verify).dump(2) + "\n";
}

std::vector<std::unique_ptr<ReportWriter>>& registry() {
  static std::vector<std::unique_ptr<ReportWriter>> all = [] {
    std::vector<std::unique_ptr<ReportWriter>> v;
    auto add = [&v](FunctionWriter::Facts facts, RenderFn render) {
      v.push_back(std::make_unique<FunctionWriter>(std::move(facts), render));
    };
    add({"md", ".md", "Markdown, for CI job summaries", {"markdown"}}, render_markdown_report);
    add({"json", ".json", "the whole result, for machines (nvdet report reads it)"},
        render_json_report);
    add({"junit", ".junit.xml", "JUnit XML, one test case per backend", {"xml"}},
        render_junit_report);
    add({"html", ".html", "one self-contained page"}, render_html_report);
    add({"verify", ".verify.json", "the --verify comparison alone", {}, "json", true},
        render_verify_report);
    return v;
  }();
  return all;
}

bool chosen_by_name(const ReportWriter& w) { return w.written_with().empty(); }

}  // namespace

const std::vector<std::unique_ptr<ReportWriter>>& report_writers() { return registry(); }

const ReportWriter* find_report_writer(std::string_view name) {
  const std::string wanted = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  for (const auto& w : report_writers()) {
    if (w->name() == wanted) return w.get();
    const auto aliases = w->aliases();
    if (std::find(aliases.begin(), aliases.end(), wanted) != aliases.end()) return w.get();
  }
  return nullptr;
}

void register_report_writer(std::unique_ptr<ReportWriter> writer) {
  std::vector<std::string_view> names = writer->aliases();
  names.push_back(writer->name());
  for (const std::string_view n : names) {
    if (n.empty() || find_report_writer(n)) {
      throw_input_error("report format name '" + std::string(n) + "' is empty or taken");
    }
  }
  if (!chosen_by_name(*writer) && !find_report_writer(writer->written_with())) {
    throw_input_error("report writer '" + std::string(writer->name()) +
                      "' is written with an unknown format '" +
                      std::string(writer->written_with()) + "'");
  }
  registry().push_back(std::move(writer));
}

std::string report_format_names() {
  std::vector<std::string> names;
  for (const auto& w : report_writers()) {
    if (chosen_by_name(*w)) names.emplace_back(w->name());
  }
  return absl::StrJoin(names, ", ");
}

std::string report_formats_help() {
  // Only the names --format takes; a companion is described beside the format it comes with,
  // never as a name of its own (which the parser would refuse).
  std::vector<std::string> lines;
  for (const auto& w : report_writers()) {
    if (!chosen_by_name(*w)) continue;
    std::string line = std::string(w->name()) + ": " + std::string(w->description());
    for (const auto& c : report_writers()) {
      if (chosen_by_name(*c) || c->written_with() != w->name()) continue;
      line += " (also " + std::string(c->extension()) + ": " + std::string(c->description()) + ")";
    }
    lines.push_back(line);
  }
  return absl::StrJoin(lines, "; ");
}

std::vector<const ReportWriter*> parse_report_formats(const std::string& csv) {
  std::vector<const ReportWriter*> formats;
  for (const absl::string_view part : absl::StrSplit(csv, ',')) {
    const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;  // tolerate "md,,json" and a trailing comma
    const ReportWriter* w = find_report_writer(name);
    if (!w || !chosen_by_name(*w)) {
      throw_input_error("unknown report format '" + excerpt(name) + "' (known formats: " +
                        report_format_names() + ")");
    }
    if (std::find(formats.begin(), formats.end(), w) == formats.end()) formats.push_back(w);
  }
  if (formats.empty()) {
    throw_input_error("no report format given (known formats: " + report_format_names() + ")");
  }
  return formats;
}

std::vector<const ReportWriter*> writers_with_companions(
    const std::vector<const ReportWriter*>& selected) {
  std::vector<const ReportWriter*> out;
  for (const ReportWriter* w : selected) {
    out.push_back(w);
    for (const auto& c : report_writers()) {
      if (!chosen_by_name(*c) && c->written_with() == w->name()) out.push_back(c.get());
    }
  }
  return out;
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
