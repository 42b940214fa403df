#pragma once
// The bench table: Markdown for people and CI summaries, JSON for tools.
#include <nlohmann/json.hpp>
#include <string>

#include "lib/runner/bench.h"

namespace nvdet {

std::string render_bench_markdown(const BenchResult& r);
nlohmann::json bench_to_json(const BenchResult& r);

}  // namespace nvdet
