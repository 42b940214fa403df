#pragma once
// nvdet bench: for each context of a scenario, the median time of one representative op call on
// each backend, with throughput and the ratio to a vendor baseline measured in the same run.
#include <functional>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/system_info.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

struct BenchOptions {
  std::vector<std::string> backends;  // empty: the scenario's
  std::string
      baseline;  // empty: cudnn for attention (when run), cublas, else the first vendor-style
  std::string context_filter;
  // As AuditOptions::filter_spans_scenarios: check_bench answers false instead of refusing when
  // the filter matches nothing of this scenario.
  bool filter_spans_scenarios = false;
  TimingOptions timing;
  std::function<void(int done, int total, const std::string& what)> on_progress;
};

struct BenchRow {
  std::string context;
  std::string backend;
  double median_us = 0.0, min_us = 0.0;
  double tflops = 0.0, gbps = 0.0;  // 0: does not apply (an op with no flops or bytes counted)
  double time_ratio = 0.0;          // this backend's time / the baseline's (1.0 for the baseline)
  double copy_fraction = 0.0;       // gbps / BenchResult::copy_gbps (0 when that was not measured)
  bool device_timed = true;         // false: host wall clock (CPU backends)
  double max_us = 0.0;              // with min_us: the spread of the timed runs
  // The context's value of each swept axis, in the scenario's order (one CSV/JSON column each).
  std::vector<std::pair<std::string, AxisValue>> context_values;
  int samples = 0;  // timed runs behind the median and spread
  // The run notes of an untimed call of the same op (on a GPU one more call after the timed
  // runs, on the host the warm-up call): what the backend chose for this context (cuDNN's engine,
  // cuBLASLt's algorithm, nvdet's kernel, tile and splits...), so that a ratio that moves between
  // runs can be told apart from a vendor library that chose another kernel.
  RunNotes notes;
};

struct BenchResult {
  std::string scenario, op, dtype, baseline;
  std::vector<std::string> axes;  // the swept axes, in the scenario's order
  SystemInfo system;
  TimingOptions timing;
  // GB/s of a device-to-device copy measured in the same run (the HBM ceiling that memory-bound
  // kernels are judged against); 0 when no GPU backend was timed.
  double copy_gbps = 0.0;
  std::vector<BenchRow> rows;
};

// What can be checked before anything is timed: the backends exist, the budget holds (before any
// context is expanded), the filter is valid and matches, the baseline is among the backends.
// Throws as run_bench would; returns false when the filter matches no context and
// options.filter_spans_scenarios says that is for the caller to judge.
bool check_bench(const Scenario& s, const BenchOptions& options);

BenchResult run_bench(const Scenario& s, const BenchOptions& options);

}  // namespace nvdet
