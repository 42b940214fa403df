#pragma once
// The HTML report: one self-contained file (inline CSS, SVG and a few lines of script; nothing
// fetched from the network) with the summary, the backends, a heatmap of each backend's results
// over the first two varying sweep axes, and each divergence's first mismatch.
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_html_report(const AuditResult& result);

}  // namespace nvdet
