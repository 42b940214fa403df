// nvdet audit SCENARIO...: run every context of each scenario through its backends, compare the
// probed requests' outputs bit for bit, and exit 0 only if every expectation held.
//
// Everything that can be checked is checked before the first context runs: every scenario file
// is loaded and validated, names are unique, backends and filters are valid, the manifest to
// verify is read, and every output target (report folder and files, manifest, dump folder) is
// of the right kind and writable. A mistake costs seconds, not a whole audit.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/manifest/manifest.h"
#include "lib/core/atomic_file.h"
#include "lib/report/ci_output.h"
#include "lib/model/decode_progress.h"
#include "lib/report/console_summary.h"
#include "lib/report/report_writers.h"
#include "lib/runner/audit.h"
#include "lib/runner/nvdet_dump.h"
#include "lib/scenario/context_filter.h"
#include "tools/command.h"
#include "tools/cli_options.h"

namespace nvdet::cli {
namespace {

namespace fs = std::filesystem;

struct AuditFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string report_dir;
  std::string formats = "md,json";
  bool format_given = false;  // --format on the command line
  std::string filter;
  bool quiet = false;
  bool list_contexts = false;
  bool skip_unavailable = false;
  std::string record, verify, dump_dir;  // --record, --verify, --dump (lib/manifest/manifest.h)
  bool strict = false;
  std::vector<std::string> verify_as;  // --verify-as RUN=RECORDED
  uint64_t max_contexts = kDefaultMaxContexts;
  std::string max_host_bytes, max_device_bytes;  // "" = sized to this machine
};

std::optional<uint64_t> byte_limit(const std::string& flag, const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (const auto b = parse_byte_size(text)) return b;
  throw_input_error(flag + " '" + text + "' is not a size (bytes, or a number with K, M, G or T)");
}

// True when two output paths name the same file (relative or absolute, through "..", links in
// their folders); both folders exist by the time this is asked.
bool same_output_path(const fs::path& a, const fs::path& b) {
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b), eb);
  return !ea && !eb && ca == cb;
}

struct Planned {
  Scenario scenario;
  std::vector<Context> contexts;
};

AuditOptions options_for(const AuditFlags& f) {
  AuditOptions opts;
  opts.backends = f.backends;
  opts.context_filter = f.filter;
  opts.skip_unavailable = f.skip_unavailable;
  opts.budget = Budget{f.max_contexts, byte_limit("--max-host-bytes", f.max_host_bytes),
                       byte_limit("--max-device-bytes", f.max_device_bytes)};
  return opts;
}

// A --filter over several scenarios applies to the run as a whole: it must match some context of
// some scenario (exit 2 naming every scenario otherwise); a scenario it matches nothing of is
// named on stderr and not run (no reports, no manifest entries).
void drop_unmatched_scenarios(const std::string& filter, std::vector<Planned>& planned) {
  if (filter.empty() || planned.size() < 2) return;
  std::vector<std::string> unmatched;
  for (const Planned& p : planned)
    if (p.contexts.empty()) unmatched.push_back(p.scenario.name);
  const std::string note = filter_run_note(filter, unmatched, planned.size());
  if (note.empty()) return;
  fmt::print(stderr, "nvdet: {}\n", note);
  std::erase_if(planned, [](const Planned& p) { return p.contexts.empty(); });
}

// Loads and checks every scenario and output target; throws (exit 2 or 3) before anything runs.
std::vector<Planned> plan(const AuditFlags& f, const std::vector<const ReportWriter*>& formats,
                          const std::optional<Manifest>& golden) {
  if (f.format_given && f.report_dir.empty()) {
    throw_input_error("--format needs --report-dir (the folder the reports are written to)");
  }
  std::vector<Planned> planned;
  for (Scenario& s : load_scenarios(f.scenarios, "reports and manifest entries")) {
    if (golden) (void)manifest_scenario(*golden, f.verify, s.name);
    AuditOptions options = options_for(f);
    options.filter_spans_scenarios = f.scenarios.size() > 1;
    std::vector<Context> contexts = check_audit(s, options);
    // A long model run says what it will compute before it starts (the budget refused worse).
    if (const ScenarioEstimate e = estimate_scenario(s); !f.quiet && e.token_layers >= 1e8)
      fmt::print(stderr, "nvdet: scenario '{}' will compute {}\n", s.name, e.work);
    planned.push_back({std::move(s), std::move(contexts)});
  }
  drop_unmatched_scenarios(f.filter, planned);
  if (f.list_contexts) return planned;
  // Output targets: the right kind and writable, before the first context runs.
  std::vector<fs::path> report_files;  // every report of the run, for the --record collision check
  if (!f.report_dir.empty()) {
    prepare_output_dir(f.report_dir, "report");
    std::set<std::string> bases;
    for (const Planned& p : planned) {
      const std::string base = report_base_name(p.scenario.name);
      if (!bases.insert(base).second) {
        throw_input_error("two scenarios would write the same reports '" + base +
                          ".*' in " + f.report_dir);
      }
      for (const ReportWriter* w : writers_with_companions(formats)) {
        if (w->needs_verify() && !golden) continue;
        report_files.push_back(fs::path(f.report_dir) / (base + std::string(w->extension())));
        check_output_file(report_files.back(), "report");
      }
    }
  }
  if (!f.record.empty()) {
    // The manifest's folder is created like the report and dump folders ("golden/" on a fresh
    // clone), and the manifest must not be one of this run's reports, which would replace it.
    const fs::path record(f.record);
    if (!record.parent_path().empty()) prepare_output_dir(record.parent_path(), "manifest");
    for (const fs::path& report : report_files) {
      if (same_output_path(record, report)) {
        throw_input_error("--record '" + f.record + "' is also a report of this run ('" +
                          report.string() + "'); record the manifest elsewhere");
      }
    }
    check_output_file(record, "manifest");
  }
  if (!f.dump_dir.empty()) prepare_output_dir(f.dump_dir, "dump");
  return planned;
}

int run(const AuditFlags& f) {
  const std::vector<const ReportWriter*> formats = parse_report_formats(f.formats);
  // A bad manifest is bad input: read it before any backend runs.
  std::optional<Manifest> golden;
  std::map<std::string, std::string> recorded_as;
  for (const std::string& a : f.verify_as) recorded_as.insert(parse_verify_as(a));
  if (!recorded_as.empty() && f.verify.empty()) throw_input_error("--verify-as needs --verify");
  if (!f.verify.empty()) golden = read_manifest(f.verify);
  const std::vector<Planned> planned = plan(f, formats, golden);
  if (f.list_contexts) {
    for (const Planned& p : planned) {
      fmt::print("{}: {} contexts\n", p.scenario.name, p.contexts.size());
      for (const Context& c : p.contexts) fmt::print("  {}\n", c.id);
    }
    return 0;
  }

  bool all_passed = true;
  Manifest recording;
  for (const Planned& p : planned) {
    const Scenario& s = p.scenario;
    AuditOptions opts = options_for(f);
    if (!f.dump_dir.empty()) {
      opts.on_outputs = [&](const CaseRecord& c, const std::vector<RequestOutput>& outputs) {
        write_case_dump(f.dump_dir, s.name, c, outputs);
      };
    }
    TerminalProgress progress(stderr);
    AuditProgress last;  // the case under way, for the model decode's per-step progress
    if (!f.quiet) {
      opts.on_progress = [&](const AuditProgress& pr) {
        last = pr;
        progress.update(pr.done, pr.total, pr.backend, pr.context, pr.context_number, pr.contexts);
      };
      set_decode_progress_sink([&](const DecodeProgress& d) {
        progress.update(last.done, last.total, d.backend, d.context, last.context_number,
                        last.contexts,
                        fmt::format("step {} of {}, {:.0f} tokens/s", d.steps_done, d.steps_total,
                                    d.tokens_per_second));
      });
    }
    struct SinkReset {  // the sink refers to this iteration's locals
      ~SinkReset() { set_decode_progress_sink(nullptr); }
    } sink_reset;
    AuditResult result = run_checked_audit(s, opts, p.contexts);
    progress.finish();
    if (golden) {
      attach_verify(result, verify_manifest(*golden, f.verify, result, {f.strict, f.dump_dir, recorded_as}));
    }
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
    publish_to_ci(result);
    all_passed = all_passed && result.summary.passed;
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
  add_list_option(cmd, "--backends", flags->backends, "Run only these backends (comma separated)");
  cmd->add_option("--report-dir", flags->report_dir, "Write reports into this folder (created)");
  CLI::Option* format =
      cmd->add_option("--format", flags->formats,
                      "Report formats, comma separated (needs --report-dir): " +
                          report_formats_help())
          ->capture_default_str();
  cmd->add_option("--filter", flags->filter, "Run only contexts whose id matches this regex");
  cmd->add_flag("--quiet", flags->quiet, "Print one line per scenario");
  cmd->add_flag("--list-contexts", flags->list_contexts,
                "Check the scenarios, print their expanded contexts (after --filter) and exit");
  cmd->add_flag("--skip-unavailable", flags->skip_unavailable,
                "Skip backends this machine cannot run (GPU backends without a GPU); reported as "
                "skipped in every format");
  cmd->add_option("--record", flags->record, "Write a golden manifest of every hash to this file");
  cmd->add_option("--verify", flags->verify,
                  "Compare hashes with this manifest (exit 1 if an invariant backend's changed)");
  cmd->add_flag("--strict", flags->strict,
                "With --verify: fail on any changed, missing or new hash, whatever the backend");
  add_list_option(cmd, "--verify-as", flags->verify_as,
                  "With --verify: compare this run's backend RUN with the hashes recorded for "
                  "RECORDED (RUN=RECORDED, e.g. cuda-portable=cpu-portable); any change fails");
  cmd->add_option("--dump", flags->dump_dir,
                  "Write the probed requests' outputs as safetensors files under this folder");
  // Up to 2^53: the budget compares context counts as doubles.
  add_integer_option<uint64_t>(cmd, "--max-contexts", flags->max_contexts, 1, uint64_t{1} << 53,
                               "Refuse scenarios that sweep more contexts than this (exit 2)");
  cmd->add_option("--max-host-bytes", flags->max_host_bytes,
                  "Refuse scenarios estimated to need more host memory per context (exit 3); "
                  "default: 3/4 of the memory available now (e.g. 64G)");
  cmd->add_option("--max-device-bytes", flags->max_device_bytes,
                  "Refuse scenarios estimated to need more GPU memory per context (exit 3); "
                  "default: the GPU's free memory");
  return [flags, format] {
    flags->format_given = format->count() > 0;
    return run(*flags);
  };
}

}  // namespace nvdet::cli
