#pragma once
// The bench table: Markdown for people and CI summaries (the table, then what each backend ran),
// JSON and CSV for tools.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/runner/bench.h"

namespace nvdet {

std::string render_bench_markdown(const BenchResult& r);
// One header line, then one line per row: scenario, context, one column per swept axis, backend,
// median/min/max us, samples, spread_pct ((max - min) / median), TFLOP/s, GB/s, copy fraction,
// time ratio, baseline, device_timed, l2, notes (the row's run notes, "key=value; ..."). Figures
// have six significant digits; a figure that does not apply (no copy rate measured, no flops
// counted) is empty. Fields holding a comma or quote are quoted (RFC 4180).
std::string render_bench_csv(const BenchResult& r);
nlohmann::json bench_to_json(const BenchResult& r);

}  // namespace nvdet
