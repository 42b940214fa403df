#pragma once
// The bench table: Markdown for people and CI summaries, JSON for tools.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/runner/bench.h"

namespace nvdet {

std::string render_bench_markdown(const BenchResult& r);
// One header line, then one line per row: context, backend, median/min/max us, TFLOP/s, GB/s,
// copy fraction, time ratio, device_timed. Fields holding a comma or quote are quoted (RFC 4180).
std::string render_bench_csv(const BenchResult& r);
nlohmann::json bench_to_json(const BenchResult& r);

}  // namespace nvdet
