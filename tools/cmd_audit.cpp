// nvdet audit SCENARIO...: run every context of each scenario through its backends, compare the
// probed requests' outputs bit for bit, and exit 0 only if every expectation held.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "lib/manifest/manifest.h"
#include "lib/report/console_summary.h"
#include "lib/report/atomic_file.h"
#include "lib/report/report_writers.h"
#include "lib/runner/audit.h"
#include "lib/tensorio/nvdet_dump.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct AuditFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string report_dir;
  std::string formats = "md,json";
  std::string filter;
  bool quiet = false;
  std::string record, verify, dump_dir;  // --record, --verify, --dump (lib/manifest/manifest.h)
  bool strict = false;
  uint64_t max_contexts = kDefaultMaxContexts;
  std::string max_host_bytes, max_device_bytes;  // "" = sized to this machine
};

std::optional<uint64_t> byte_limit(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (const auto b = parse_byte_size(text)) return b;
  throw_input_error(flag + " '" + text + "' is not a size (bytes, or a number with K, M, G or T)");
}

int run(const AuditFlags& f) {
  const std::vector<ReportFormat> formats = parse_report_formats(f.formats);
  const Budget budget{f.max_contexts, byte_limit("--max-host-bytes", f.max_host_bytes),
                      byte_limit("--max-device-bytes", f.max_device_bytes)};
  bool all_passed = true;
  // A bad manifest is bad input: read it before any backend runs.
  std::optional<Manifest> golden;
  if (!f.verify.empty()) golden = read_manifest(f.verify);
  Manifest recording;
  for (const std::string& path : f.scenarios) {
    const Scenario s = load_scenario(path);
    if (golden) (void)manifest_scenario(*golden, f.verify, s.name);
    AuditOptions opts;
    if (!f.dump_dir.empty()) {
      opts.on_outputs = [&](const CaseRecord& c, const std::vector<RequestOutput>& outputs) {
        write_case_dump(f.dump_dir, s.name, c, outputs);
      };
    }
    opts.backends = f.backends;
    opts.context_filter = f.filter;
    opts.budget = budget;
    TerminalProgress progress(stderr);
    if (!f.quiet) {
      opts.on_progress = [&](const AuditProgress& p) {
        progress.update(p.done, p.total, p.backend, p.context);
      };
    }
    const AuditResult result = run_audit(s, opts);
    progress.finish();
    if (f.quiet) {
      fmt::print("{}: audit {}\n", s.name, result.summary.passed ? "PASSED" : "FAILED");
    } else {
      fmt::print("{}", render_console_summary(result));
    }
    if (!f.report_dir.empty()) {
      for (const auto& written : write_reports(result, f.report_dir, formats)) {
        if (!f.quiet) fmt::print("report: {}\n", written.string());
      }
    }
    all_passed = all_passed && result.summary.passed;
    if (golden) {
      const VerifyResult v = verify_manifest(*golden, f.verify, result, {f.strict, f.dump_dir});
      if (f.quiet) {
        fmt::print("{}: verify {}\n", s.name, v.passed ? "PASSED" : "FAILED");
      } else {
        fmt::print("{}", render_verify_text(v));
      }
      if (!f.report_dir.empty() &&
          std::find(formats.begin(), formats.end(), ReportFormat::kJson) != formats.end()) {
        const auto file = std::filesystem::path(f.report_dir) / (report_base_name(result) + ".verify.json");
        write_file_atomic(file, verify_to_json(v).dump(2) + "\n", "report");
        if (!f.quiet) fmt::print("report: {}\n", file.string());
      }
      all_passed = all_passed && v.passed;
    }
    if (!f.record.empty()) recording.add(result);
  }
  if (!f.record.empty()) {
    write_manifest(f.record, recording, f.dump_dir);
    if (!f.quiet) fmt::print("manifest: {}\n", f.record);
  }
  return static_cast<int>(all_passed ? ExitCode::kOk : ExitCode::kExpectationFailed);
}

}  // namespace

Action add_audit_command(CLI::App& app) {
  auto flags = std::make_shared<AuditFlags>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "Run scenarios and check every backend's expectation (exit 0 pass, 1 fail)");
  cmd->add_option("scenario", flags->scenarios, "Scenario YAML files")->required();
  cmd->add_option("--backends", flags->backends, "Run only these backends (comma separated)")
      ->delimiter(',');
  cmd->add_option("--report-dir", flags->report_dir, "Write reports into this folder");
  cmd->add_option("--format", flags->formats, "Report formats: md,json,junit,html")
      ->capture_default_str();
  cmd->add_option("--filter", flags->filter, "Run only contexts whose id matches this regex");
  cmd->add_flag("--quiet", flags->quiet, "Print one line per scenario");
  cmd->add_option("--record", flags->record, "Write a golden manifest of every hash to this file");
  cmd->add_option("--verify", flags->verify,
                  "Compare hashes with this manifest (exit 1 if an invariant backend's changed)");
  cmd->add_flag("--strict", flags->strict,
                "With --verify: fail on any changed, missing or new hash, whatever the backend");
  cmd->add_option("--dump", flags->dump_dir,
                  "Write the probed requests' outputs as safetensors files under this folder");
  cmd->add_option("--max-contexts", flags->max_contexts,
                  "Refuse scenarios that sweep more contexts than this (exit 2)")
      ->capture_default_str();
  cmd->add_option("--max-host-bytes", flags->max_host_bytes,
                  "Refuse scenarios estimated to need more host memory per context (exit 3); "
                  "default: 3/4 of the memory available now (e.g. 64G)");
  cmd->add_option("--max-device-bytes", flags->max_device_bytes,
                  "Refuse scenarios estimated to need more GPU memory per context (exit 3); "
                  "default: the GPU's free memory");
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
