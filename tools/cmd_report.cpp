// nvdet report AUDIT.json...: render the Markdown, HTML, JUnit (and JSON) reports again from JSON
// audit reports, with this build's writers, without running anything. Reports made on a GPU
// machine are re-rendered anywhere after a writer changes. The JSON reports of a sharded sweep
// (`nvdet audit --shard I/N`) are merged into the report set of the unsharded run; manifests
// given beside them (or recorded from the reports with --record) merge likewise.
#include <fmt/format.h>

#include "lib/core/atomic_file.h"
#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/manifest/manifest_merge.h"
#include "lib/report/console_summary.h"
#include "lib/report/json_report_reader.h"
#include "lib/report/merge_reports.h"
#include "lib/report/report_writers.h"
#include "lib/runner/audit.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> inputs;
  std::string report_dir;
  std::string formats = "md,html";
  std::string record;  // --record: the manifest of the (merged) results and given manifests
  std::string verify;  // --verify: check the (merged) results against this manifest
  bool strict = false;
};

int run(const ReportFlags& f) {
  const std::vector<const ReportWriter*> formats = parse_report_formats(f.formats);
  std::vector<AuditResult> inputs;
  std::vector<Manifest> manifests;
  std::vector<std::string> manifest_names;
  for (const std::string& path : f.inputs) {
    // A manifest or a report: read once (bounded like every input), told apart by its key.
    const std::string text = read_bounded_file(path, kMaxAuditReportBytes, "audit report");
    const nlohmann::json j = parse_json_input(text, "audit report '" + path + "'");
    if (j.is_object() && j.contains("nvdet_manifest")) {
      if (text.size() > kMaxJsonFileBytes) {
        throw_input_error("manifest '" + path + "' is larger than " +
                          std::to_string(kMaxJsonFileBytes >> 20) + " MiB");
      }
      manifests.push_back(manifest_from_json(j, "manifest '" + path + "'"));
      manifest_names.push_back(path);
    } else {
      inputs.push_back(audit_from_json(j, path));
    }
  }
  if (!manifests.empty() && f.record.empty()) {
    throw_input_error("manifests are merged into --record MANIFEST; give it");
  }
  if (!inputs.empty() && f.report_dir.empty()) {
    throw_input_error("--report-dir is needed to write the reports");
  }
  std::vector<AuditResult> results = merge_shard_results(std::move(inputs));
  if (!f.verify.empty()) {
    const Manifest golden = read_manifest(f.verify);
    for (AuditResult& r : results) {
      if (r.verify) {
        throw_input_error("report of '" + r.scenario.name +
                          "' already carries a manifest verification; --verify is for reports "
                          "without one");
      }
      attach_verify(r, verify_manifest(golden, f.verify, r, {f.strict, "", {}}));
    }
  }
  if (!results.empty()) prepare_output_dir(f.report_dir, "report");
  for (const AuditResult& r : results) {
    for (const ReportWriter* w : writers_with_companions(formats)) {
      if (w->needs_verify() && !r.verify) continue;
      check_output_file(
          std::filesystem::path(f.report_dir) / (report_base_name(r) + std::string(w->extension())),
          "report");
    }
  }
  if (!f.record.empty()) check_output_file(f.record, "manifest");
  bool all_passed = true;
  int empty = 0;
  for (const AuditResult& r : results) {
    // The verdict first (of the merged sweep, for shards), as the audit's console ends with it.
    fmt::print("{}: {}\n", r.scenario.name, render_verdict_line(r));
    for (const auto& written : write_reports(r, f.report_dir, formats)) {
      fmt::print("report: {}\n", written.string());
    }
    all_passed = all_passed && r.summary.passed;
    empty += ran_nothing(r) ? 1 : 0;
  }
  if (!f.record.empty()) {
    for (const AuditResult& r : results) {
      Manifest m;
      m.add(r);
      manifests.push_back(std::move(m));
      manifest_names.push_back("report of '" + r.scenario.name + "'");
    }
    write_manifest(f.record, merge_manifests(manifests, manifest_names));
    fmt::print("manifest: {}\n", f.record);
  }
  // The exit code restates the reports' verdict, as the audit that made them did.
  if (!all_passed) return static_cast<int>(ExitCode::kExpectationFailed);
  if (!results.empty() && empty == static_cast<int>(results.size())) {
    return static_cast<int>(ExitCode::kNothingRan);
  }
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace

Action add_report_command(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Render reports again from JSON audit reports, merging shards (no backend runs)");
  cmd->add_option("audit_json", flags->inputs,
                  "JSON audit reports (nvdet audit --format json; a sharded sweep's shards are "
                  "merged) and manifests to merge into --record")
      ->required();
  cmd->add_option("--report-dir", flags->report_dir, "Write the reports into this folder");
  cmd->add_option("--format", flags->formats,
                  "Report formats, comma separated: " + report_formats_help())
      ->capture_default_str();
  cmd->add_option("--record", flags->record,
                  "Write the manifest of these reports (and of the manifests given) to this file");
  cmd->add_option("--verify", flags->verify,
                  "Check the (merged) reports' hashes against this manifest, as audit --verify");
  cmd->add_flag("--strict", flags->strict,
                "With --verify: fail on any changed, missing or new hash, whatever the backend");
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
