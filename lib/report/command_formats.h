#pragma once
// nvdet bench's and nvdet bisect's output formats, one FormatRegistry each, as the audit's report
// writers are (lib/report/report_writers.h): `--format` is parsed, refused and listed in --help
// from them, and so is `nvdet list`'s `formats`. A format is added with the registry's add().
#include "lib/report/format_registry.h"
#include "lib/runner/bench.h"
#include "lib/runner/bisect.h"

namespace nvdet {

using BenchWriter = Writer<BenchResult>;
using BisectWriter = Writer<BisectResult>;

// md (also printed on stdout and appended to the CI job summary), json, csv: each written as
// bench-<scenario><suffix> into --report-dir.
FormatRegistry<BenchWriter>& bench_format_registry();

// text (the default), json, html: the chosen one is printed on stdout.
FormatRegistry<BisectWriter>& bisect_format_registry();

}  // namespace nvdet
