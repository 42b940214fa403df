// nvdet bench SCENARIO...: invariant vs vendor kernel time, as ratios measured in one run.
#include <fmt/format.h>

#include "lib/report/atomic_file.h"
#include "lib/report/bench_report.h"
#include "lib/report/console_summary.h"
#include "lib/runner/bench.h"
#include "tools/command.h"

namespace nvdet::cli {
namespace {

struct BenchFlags {
  std::vector<std::string> scenarios;
  std::vector<std::string> backends;
  std::string baseline;
  std::string filter;
  std::string report_dir;
  int warmup = 5;
  int reps = 20;
};

int run(const BenchFlags& f) {
  if (f.warmup < 0 || f.reps < 1) throw_input_error("--warmup must be >= 0 and --reps >= 1");
  for (const std::string& path : f.scenarios) {
    const Scenario s = load_scenario(path);
    BenchOptions opts;
    opts.backends = f.backends;
    opts.baseline = f.baseline;
    opts.context_filter = f.filter;
    opts.timing = {f.warmup, f.reps};
    TerminalProgress progress(stderr);
    opts.on_progress = [&](int done, int total, const std::string& what) {
      progress.update(done, total, what, "");
    };
    const BenchResult r = run_bench(s, opts);
    progress.finish();
    const std::string md = render_bench_markdown(r);
    fmt::print("{}\n", md);
    if (!f.report_dir.empty()) {
      const std::filesystem::path dir(f.report_dir);
      write_file_atomic(dir / ("bench-" + s.name + ".md"), md, "bench report");
      write_file_atomic(dir / ("bench-" + s.name + ".json"), bench_to_json(r).dump(2) + "\n",
                        "bench report");
    }
  }
  return 0;
}

}  // namespace

Action add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Time each backend per context, as ratios to a vendor baseline");
  cmd->add_option("scenario", flags->scenarios, "Scenario YAML files")->required();
  cmd->add_option("--backends", flags->backends, "Time only these backends")->delimiter(',');
  cmd->add_option("--baseline", flags->baseline,
                  "Backend the ratios are taken against (default: cudnn for attention, cublas, "
                  "else the first vendor-style backend)");
  cmd->add_option("--filter", flags->filter, "Only contexts whose id matches this regex");
  cmd->add_option("--report-dir", flags->report_dir, "Write bench-<scenario>.md/.json here");
  cmd->add_option("--warmup", flags->warmup, "Warm-up runs per measurement")->capture_default_str();
  cmd->add_option("--reps", flags->reps, "Timed runs per measurement (median reported)")
      ->capture_default_str();
  return [flags] { return run(*flags); };
}

}  // namespace nvdet::cli
