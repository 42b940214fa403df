#pragma once
// The HTML report: one self-contained file (inline CSS, SVG and a few lines of script; nothing
// fetched from the network) with the summary, the backends, a heatmap of each backend's results
// over the first two varying sweep axes, and each divergence's first mismatch.
#include <string>
#include <string_view>

#include "lib/runner/audit_result.h"

namespace nvdet {

std::string render_html_report(const AuditResult& result);

// Escapes text for HTML element content and attribute values.
std::string html_escape(std::string_view text);

}  // namespace nvdet
