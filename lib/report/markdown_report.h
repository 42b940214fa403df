#pragma once
// The Markdown report: short enough for a CI job summary (GitHub step summary), precise enough to
// act on: verdict, device, one row per backend, and for each backend that diverged, where in the
// sweep it changes and its first mismatches.
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_markdown_report(const AuditResult& result);

}  // namespace nvdet
