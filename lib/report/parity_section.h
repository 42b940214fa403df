#pragma once
// The sampler/trainer section of every report format (model scenarios with a scoring pass,
// lib/model/scoring_pass.h): per backend, how many generated tokens' logits rows the decode (the
// sampler) and the scoring pass (the trainer) computed bit for bit alike, and the metrics RL
// frameworks watch: mismatch_kl (mean, max), logprob_abs_diff (max, mean), k3 (mean), at
// temperature 1 over the whole vocabulary and, for a sampled scenario, at its sampling
// distribution (lib/runner/parity_metrics.h says which is which); the same per scoring pass
// setting (score_batch, score_chunk) and per request; the first differing token and the first op
// where the two parted. Each render function reads the result model only and returns "" (or
// nothing) when no backend was scored.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

// "24 of 24 tokens bitwise equal; mismatch_kl mean 0 max 0; logprob_abs_diff max 0 mean 0; k3
// mean 0" (the metrics at temperature 1).
std::string parity_sentence(const ParitySummary& p);

// Console: the lines under a backend's verdict ("       sampler/trainer (expect ...): ...").
std::string parity_console_lines(const AuditResult& r, const BackendOutcome& b);
// Markdown: a "## Sampler against trainer" section: per backend, per scoring pass setting, and
// (folded away) per scored request of each case.
std::string parity_markdown_section(const AuditResult& r);
// HTML: a <section id="parity"> with the same tables.
std::string parity_html_section(const AuditResult& r);

// JUnit: one test case per scored backend ("<backend>/sampler-trainer"), failed when the backend
// was expected bitwise parity and some row differs, or parity within limits and a metric passed
// its limit; and the backend suite's properties (the summary at each distribution, and one per
// scoring pass setting).
struct ParityTestCase {
  std::string name, message, details;
  bool failed = false;
};
std::optional<ParityTestCase> parity_junit_case(const BackendOutcome& b);
std::vector<std::pair<std::string, std::string>> parity_junit_properties(const AuditResult& r,
                                                                         const BackendOutcome& b);

}  // namespace nvdet
