#pragma once
// nvdet bisect's output formats: one FormatRegistry (as the audit's report writers), from which
// `bisect --format` is parsed and listed in --help; the chosen one is printed on stdout.
#include "lib/report/format_registry.h"
#include "lib/runner/bisect.h"

namespace nvdet {

using BisectWriter = Writer<BisectResult>;

// text (the default), json, html.
const FormatRegistry<BisectWriter>& bisect_format_registry();

// Adds a format (FormatRegistry::add's checks).
void register_bisect_writer(std::unique_ptr<BisectWriter> writer);

}  // namespace nvdet
