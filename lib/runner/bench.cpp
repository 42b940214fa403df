#include "lib/runner/bench.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "lib/backend/host_timer.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/loader/op_table.h"
#include "lib/runner/audit.h"
#include "lib/scenario/context_filter.h"
#include "lib/scenario/typo_hint.h"
#include "lib/workloads/workload.h"

namespace nvdet {
namespace {

// CPU backends have no device timer: median host wall clock of a few runs. The first call, the
// untimed warm-up, writes the run notes.
Timing host_time(Backend& b, const OpArgs& args, const TimingOptions& opts, RunNotes* notes) {
  const TimingOptions few{1, std::max(1, std::min(opts.repetitions, 5))};
  return time_host_driven([&] { b.run(args, std::exchange(notes, nullptr)); }, few);
}

// --baseline, or the vendor kernel users actually run (the registry's BenchRole: cuDNN's SDPA
// for attention, cuBLAS for GEMM).
std::string pick_baseline(const std::vector<BackendSpec>& specs, const std::string& requested,
                          OpKind op) {
  if (!requested.empty()) {
    for (const BackendSpec& s : specs) {
      if (s.name == requested) return requested;
    }
    std::vector<std::string> names;
    for (const BackendSpec& s : specs) names.push_back(s.name);
    throw_input_error("--baseline '" + excerpt(requested) + "'" + typo_hint(requested, names) +
                      " is not among the backends being timed");
  }
  std::vector<std::string> timed;
  for (const BackendSpec& s : specs) timed.push_back(s.name);
  return default_bench_baseline(op, timed);
}

}  // namespace

bool check_bench(const Scenario& s, const BenchOptions& options) {
  const std::vector<BackendSpec> specs = select_backends(s, options.backends);
  check_scenario_budget(s, specs, Budget{});  // before the contexts are expanded
  const ContextFilter filter(options.context_filter);
  bool matched = true;
  if (!filter.empty()) {
    const std::vector<Context> all = expand_contexts(s);
    matched = !select_contexts(all, filter).empty();
    if (!matched && !options.filter_spans_scenarios) throw_input_error(no_match_text(filter, all));
  }
  (void)pick_baseline(specs, options.baseline, s.op);
  const DeviceFacts device = device_facts();
  for (const BackendSpec& spec : specs) {
    (void)check_backend_support(s, spec, device, false,
                                " (--backends chooses the backends to time; bench has no "
                                "--skip-unavailable)");
  }
  return matched;
}

BenchResult run_bench(const Scenario& s, const BenchOptions& options) {
  const std::vector<BackendSpec> specs = select_backends(s, options.backends);
  check_scenario_budget(s, specs, Budget{});  // the audit's default limits
  const std::vector<Context> contexts = filter_contexts(expand_contexts(s), options.context_filter);
  std::unique_ptr<Workload> workload = make_workload(s);
  BenchResult result;
  result.scenario = s.name;
  result.op = std::string(op_name(s.op));
  result.dtype = std::string(dtype_name(s.dtype));
  result.baseline = pick_baseline(specs, options.baseline, s.op);
  result.system = collect_system_info();
  result.timing = options.timing;
  for (const SweepAxis& a : s.sweep) result.axes.push_back(a.name());

  std::vector<std::unique_ptr<Backend>> backends;
  for (const BackendSpec& spec : specs) backends.push_back(make_backend(spec.name));
  for (auto& b : backends) {
    if (std::optional<double> gbps = b->copy_bandwidth_gbps(options.timing)) {
      result.copy_gbps = *gbps;
      break;
    }
  }
  const int total = static_cast<int>(contexts.size() * backends.size());
  int done = 0;
  for (const Context& c : contexts) {
    std::unique_ptr<BenchCase> bc = workload->bench_case(c);
    std::map<std::string, double> median;
    const size_t first_row = result.rows.size();
    for (auto& b : backends) {
      if (options.on_progress) options.on_progress(done, total, b->info().name + " " + c.id);
      std::optional<Timing> t = b->time(bc->args, options.timing);
      BenchRow row;
      row.device_timed = t.has_value();
      if (t) {
        // One more call after the timed runs, so that nothing it leaves behind can change them.
        b->run(bc->args, &row.notes);
      } else {
        t = host_time(*b, bc->args, options.timing, &row.notes);
      }
      if (row.device_timed && !options.timing.launch_gaps && !t->queued) {
        row.notes["timing"] =
            "each run launched as the GPU reached it (the call waits for the device while it "
            "launches), so the host's launch cost is in its time";
      }
      row.context = c.id;
      row.context_values = c.values;
      row.samples = t->repetitions > 0 ? t->repetitions : options.timing.repetitions;
      row.backend = b->info().name;
      row.median_us = t->median_us;
      row.min_us = t->min_us;
      row.max_us = t->max_us;
      row.tflops = bc->flops / (t->median_us * 1e-6) / 1e12;
      row.gbps = bc->bytes / (t->median_us * 1e-6) / 1e9;
      if (row.device_timed && result.copy_gbps > 0) row.copy_fraction = row.gbps / result.copy_gbps;
      median[row.backend] = t->median_us;
      result.rows.push_back(std::move(row));
      ++done;
    }
    for (size_t i = first_row; i < result.rows.size(); ++i) {
      result.rows[i].time_ratio = result.rows[i].median_us / median.at(result.baseline);
    }
  }
  return result;
}

}  // namespace nvdet
