#pragma once
// nvdet bench's output formats: one FormatRegistry (as the audit's report writers), from which
// `bench --format` is parsed, listed in --help and written as bench-<scenario><suffix>.
#include "lib/report/format_registry.h"
#include "lib/runner/bench.h"

namespace nvdet {

using BenchWriter = Writer<BenchResult>;

// md (also printed on stdout and appended to the CI job summary), json, csv.
const FormatRegistry<BenchWriter>& bench_format_registry();

// Adds a format (FormatRegistry::add's checks).
void register_bench_writer(std::unique_ptr<BenchWriter> writer);

}  // namespace nvdet
