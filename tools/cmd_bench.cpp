// nvdet bench SCENARIO...: invariant vs vendor kernel time, as ratios measured in one run.
// As with audit, every scenario and output target is checked before anything is timed.
#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "lib/backend/backend.h"
#include "lib/core/atomic_file.h"
#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/report/ci_output.h"
#include "lib/report/command_formats.h"
#include "lib/report/console_summary.h"
#include "lib/runner/bench.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/scenario/context_filter.h"
#include "tools/cli_options.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

namespace fs = std::filesystem;

// More runs per measurement than this is a typo, not a measurement: it would time for days.
constexpr int kMaxRuns = 100000;

struct BenchFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string baseline;
  std::string filter;
  std::string report_dir;
  std::string formats = "md,json";
  bool format_given = false;
  int warmup = 5;
  int reps = 20;
  std::string l2 = "hot";         // --l2 hot | cold
  bool launch_gaps = false;       // --launch-gaps
  std::vector<std::string> axes;  // --axis NAME=VALUES
};

// The default baselines as the registry's bench roles state them: "cudnn for attention_decode,
// attention_prefill; cublas".
std::string default_baseline_help() {
  std::vector<std::string> parts;
  for (const BackendRegistration& r : backend_registry()) {
    if (r.bench.baseline_for.empty()) continue;
    std::vector<std::string> ops;
    for (const OpKind op : r.bench.baseline_for) ops.emplace_back(op_name(op));
    parts.push_back(r.info.name + " for " + absl::StrJoin(ops, ", "));
  }
  for (const BackendRegistration& r : backend_registry()) {
    if (r.bench.fallback_baseline) parts.push_back(r.info.name);
  }
  return absl::StrJoin(parts, "; ");
}

BenchOptions options_for(const BenchFlags& f) {
  BenchOptions opts;
  opts.backends = f.backends;
  opts.baseline = f.baseline;
  opts.context_filter = f.filter;
  opts.timing = {f.warmup, f.reps};
  opts.timing.flush_l2 = f.l2 == "cold";
  opts.timing.launch_gaps = f.launch_gaps;
  return opts;
}

int run(const BenchFlags& f) {
  if (f.l2 != "hot" && f.l2 != "cold") {
    throw_input_error("--l2 must be hot or cold, got '" + f.l2 + "'");
  }
  const std::vector<const BenchWriter*> formats = bench_format_registry().parse(f.formats);
  if (f.format_given && f.report_dir.empty()) {
    throw_input_error("--format needs --report-dir (the folder the bench tables are written to)");
  }
  // Check everything before the first measurement.
  std::vector<AxisOverride> overrides;
  for (const std::string& a : f.axes) overrides.push_back(parse_axis_override(a));
  std::vector<Scenario> scenarios = load_scenarios(f.scenarios, "bench tables", overrides);
  // A --filter over several scenarios applies to the run as a whole (as in nvdet audit).
  std::vector<std::string> unmatched;
  for (const Scenario& s : scenarios) {
    BenchOptions opts = options_for(f);
    opts.filter_spans_scenarios = scenarios.size() > 1;
    if (!check_bench(s, opts)) unmatched.push_back(s.name);
    if (const std::string note = checkpoint_rounding_note(s); !note.empty())
      fmt::print(stderr, "nvdet: {}\n", note);
  }
  if (const std::string note = filter_run_note(f.filter, unmatched, scenarios.size());
      !note.empty()) {
    fmt::print(stderr, "nvdet: {}\n", note);
    std::erase_if(scenarios, [&](const Scenario& s) {
      return std::find(unmatched.begin(), unmatched.end(), s.name) != unmatched.end();
    });
  }
  const fs::path dir(f.report_dir);
  if (!f.report_dir.empty()) {
    prepare_output_dir(dir, "bench report");
    for (const Scenario& s : scenarios) {
      for (const BenchWriter* w : formats) {
        check_output_file(dir / ("bench-" + s.name + std::string(w->extension())), "bench report");
      }
    }
  }
  for (const Scenario& s : scenarios) {
    BenchOptions opts = options_for(f);
    TerminalProgress progress(stderr);
    opts.on_progress = [&](int done, int total, const std::string& what) {
      progress.update(done, total, what, "");
    };
    const BenchResult r = run_bench(s, opts);
    progress.finish();
    const std::string md = bench_format_registry().find("md")->render(r);
    fmt::print("{}\n", md);
    append_step_summary(md);
    if (!f.report_dir.empty()) {
      for (const BenchWriter* w : formats) {
        const fs::path file = dir / ("bench-" + s.name + std::string(w->extension()));
        write_file_atomic(file, w->render(r), "bench report");
      }
    }
  }
  return 0;
}

}  // namespace

Action add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Time each backend per context, as ratios to a vendor baseline");
  cmd->add_option("scenario", flags->scenarios, "Scenario YAML files")->required();
  add_list_option(cmd, "--backends", flags->backends, "Time only these backends");
  cmd->add_option("--baseline", flags->baseline,
                  "Backend the ratios are taken against (default: " + default_baseline_help() +
                      ", else the first vendor-style backend)");
  cmd->add_option("-k,--filter", flags->filter, "Only contexts whose id matches this regex");
  cmd->add_option("--report-dir", flags->report_dir,
                  "Write bench-<scenario><suffix> here, one per --format (the folder is created)");
  CLI::Option* format =
      cmd->add_option("--format", flags->formats,
                      "Bench table formats, comma separated (needs --report-dir): " +
                          bench_format_registry().help())
          ->capture_default_str();
  cmd->add_option("--axis", flags->axes,
                  "Sweep axis NAME over VALUES instead of the scenario's (NAME=VALUES, as audit's)")
      ->allow_extra_args(false);
  add_integer_option(cmd, "--warmup", flags->warmup, 0, kMaxRuns, "Warm-up runs per measurement");
  add_integer_option(cmd, "--reps", flags->reps, 1, kMaxRuns,
                     "Timed runs per measurement (median and spread reported)");
  cmd->add_option("--l2", flags->l2,
                  "GPU rows: hot leaves each run's operands in the L2 the previous run filled "
                  "(weights under the L2's size are then read from cache); cold evicts the L2 "
                  "before each timed run, outside the timed region, as a model whose layers each "
                  "read their own weights sees it")
      ->capture_default_str();
  cmd->add_flag("--launch-gaps", flags->launch_gaps,
                "GPU rows: launch each timed run as the GPU reaches it, so that the host's launch "
                "cost is in its time (default: the runs are queued ahead behind a held stream and "
                "time the device's work alone, as a serving stack's CUDA graphs replay it)");
  return [flags, format] {
    flags->format_given = format->count() > 0;
    return run(*flags);
  };
}

}  // namespace nvdet::cli
