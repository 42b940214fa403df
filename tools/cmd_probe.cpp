// nvdet probe SCENARIO...: audit a running OpenAI-compatible server for batch invariance. Each
// probed prompt runs alone (the control) and among seeded fillers under every point of the sweep;
// the result goes through the audit's writers, CI output and exit codes (lib/probe/).
//
// As in nvdet audit, everything that can be checked is checked before the first request: every
// scenario is loaded and is a probe, --url is one nvdet may send to, the headers' environment
// variables are set, the filter matches, and the report folder and files are writable.
#include <fmt/format.h>

#include <set>

#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/probe/probe_runner.h"
#include "lib/report/console_summary.h"
#include "lib/report/report_writers.h"
#include "lib/runner/shard.h"
#include "lib/scenario/context_filter.h"
#include "tools/cli_options.h"
#include "tools/command.h"
#include "tools/result_output.h"

namespace nvdet::cli {
namespace {

namespace fs = std::filesystem;

struct ProbeFlags {
  std::vector<std::string> scenarios;
  std::string url;
  std::string report_dir;
  std::string formats = "md,json";
  bool format_given = false;
  std::string filter;
  bool quiet = false;
  bool list_contexts = false;
  std::vector<std::string> axes;
  std::string shard;
};

struct Planned {
  Scenario scenario;
  std::vector<Context> contexts;
  std::optional<ShardInfo> shard;
};

ProbeOptions options_for(const ProbeFlags& f, size_t scenarios) {
  ProbeOptions o;
  o.url = f.url;
  o.context_filter = f.filter;
  o.filter_spans_scenarios = scenarios > 1;
  return o;
}

std::vector<Planned> plan(const ProbeFlags& f, const std::vector<const ReportWriter*>& formats) {
  if (f.format_given && f.report_dir.empty())
    throw_input_error("--format needs --report-dir (the folder the reports are written to)");
  if (!f.url.empty() && f.scenarios.size() > 1)
    throw_input_error("--url names one server: give it with one scenario");
  const std::optional<ShardSpec> shard =
      f.shard.empty() ? std::nullopt : std::optional<ShardSpec>(parse_shard(f.shard));
  std::vector<AxisOverride> overrides;
  for (const std::string& a : f.axes) overrides.push_back(parse_axis_override(a));
  std::vector<Planned> planned;
  std::vector<std::string> unmatched;
  for (Scenario& s : load_scenarios(f.scenarios, "reports", overrides)) {
    std::vector<Context> contexts = check_probe(s, options_for(f, f.scenarios.size()));
    if (contexts.empty()) {
      unmatched.push_back(s.name);
      continue;
    }
    std::optional<ShardInfo> info = keep_shard(contexts, shard, f.filter);
    planned.push_back({std::move(s), std::move(contexts), std::move(info)});
  }
  if (const std::string note = filter_run_note(f.filter, unmatched, f.scenarios.size());
      !note.empty())
    fmt::print(stderr, "nvdet: {}\n", note);
  if (f.list_contexts || f.report_dir.empty()) return planned;
  prepare_output_dir(f.report_dir, "report");
  std::set<std::string> bases;
  for (const Planned& p : planned) {
    const std::string base = p.shard
                                 ? report_base_name(p.scenario.name, p.shard->index, p.shard->count)
                                 : report_base_name(p.scenario.name);
    if (!bases.insert(base).second)
      throw_input_error("two scenarios would write the same reports '" + base + ".*' in " +
                        f.report_dir);
    for (const ReportWriter* w : writers_with_companions(formats)) {
      if (w->needs_verify()) continue;
      check_output_file(fs::path(f.report_dir) / (base + std::string(w->extension())), "report");
    }
  }
  return planned;
}

int run(const ProbeFlags& f) {
  const std::vector<const ReportWriter*> formats = parse_report_formats(f.formats);
  const std::vector<Planned> planned = plan(f, formats);
  if (f.list_contexts) {
    for (const Planned& p : planned) {
      fmt::print("{}: {} contexts\n", p.scenario.name, p.contexts.size());
      for (const Context& c : p.contexts) {
        const bool control = c.index == 0;
        const bool baseline_only =
            p.shard && !std::binary_search(p.shard->owned.begin(), p.shard->owned.end(), c.index);
        fmt::print(
            "  {}{}{}\n", c.id,
            control ? fmt::format("  (the control: {} runs alone)", p.scenario.probe.control) : "",
            baseline_only ? "  (baseline only: another shard owns it)" : "");
      }
    }
    return 0;
  }
  int failed = 0, empty = 0, cases = 0;
  double seconds = 0.0;
  for (const Planned& p : planned) {
    ProbeOptions options = options_for(f, planned.size());
    options.shard = p.shard;
    TerminalProgress progress(stderr);
    if (!f.quiet) {
      options.on_progress = [&progress](const AuditProgress& pr) {
        progress.update(pr.done, pr.total, pr.backend, pr.context, pr.context_number, pr.contexts);
      };
    }
    const AuditResult result = run_probe(p.scenario, options, p.contexts);
    progress.finish();
    print_and_write_result(result, f.report_dir, formats, f.quiet);
    failed += result.summary.passed ? 0 : 1;
    empty += ran_nothing(result) ? 1 : 0;
    cases += result.summary.cases;
    seconds += result.summary.seconds;
  }
  const int scenarios = static_cast<int>(planned.size());
  if (scenarios > 1) {
    fmt::print("nvdet probe: {} of {} scenarios passed, {} failed; {} cases ({:.1f} s)\n",
               scenarios - failed - empty, scenarios, failed, cases, seconds);
  }
  if (failed > 0) return static_cast<int>(ExitCode::kExpectationFailed);
  if (scenarios > 0 && empty == scenarios) return static_cast<int>(ExitCode::kNothingRan);
  return static_cast<int>(ExitCode::kOk);
}

}  // namespace

Action add_probe_command(CLI::App& app) {
  auto flags = std::make_shared<ProbeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "probe",
      "Audit a running OpenAI-compatible server: each probed prompt alone and among seeded "
      "fillers (exit 0 pass, 1 fail, 3 when the server fails)");
  cmd->add_option("scenario", flags->scenarios, "Probe scenario YAML files (op: probe)")
      ->required();
  cmd->add_option("--url", flags->url,
                  "Send to this base URL instead of the scenario's endpoint.url (one scenario)");
  CLI::Option* format =
      add_report_options(cmd, flags->report_dir, flags->formats, flags->filter, flags->quiet);
  cmd->add_option("--axis", flags->axes,
                  "Sweep axis NAME over VALUES instead of the scenario's (NAME=VALUES, e.g. "
                  "concurrency=1,8,32); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--shard", flags->shard,
                  "Run shard I of N of every scenario's contexts (I/N, from 1), or auto; each "
                  "shard runs the control too, and nvdet report merges the shards' JSON reports");
  cmd->add_flag("--list-contexts", flags->list_contexts,
                "Check the scenarios, print their contexts (after --filter) and exit");
  return [flags, format] {
    flags->format_given = format->count() > 0;
    return run(*flags);
  };
}

}  // namespace nvdet::cli
