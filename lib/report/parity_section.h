#pragma once
// The sampler/trainer section of every report format (model scenarios with a scoring pass,
// lib/model/scoring_pass.h): per backend, how many generated tokens' logits rows the decode (the
// sampler) and the scoring pass (the trainer) computed bit for bit alike, and the metrics RL
// frameworks watch: mismatch_kl (mean, max), logprob_abs_diff (max, mean), k3 (mean), the first
// differing token and the first op where the two parted. Each render function reads the result
// model only and returns "" when no backend was scored.
#include <optional>
#include <string>

#include "lib/runner/audit_result.h"

namespace nvdet {

// One sentence of a backend's summary: "24 of 24 tokens bitwise equal; mismatch_kl mean 0 ...".
std::string parity_sentence(const ParitySummary& p);

// Console: the lines under a backend's verdict ("       sampler/trainer: ...").
std::string parity_console_lines(const BackendOutcome& b);
// Markdown: a "## Sampler against trainer" section, one row per backend and one per scored
// request of each case.
std::string parity_markdown_section(const AuditResult& r);
// HTML: a <section id="parity"> with the same tables.
std::string parity_html_section(const AuditResult& r);

// JUnit: one test case per scored backend ("<backend>/sampler-trainer"), failed when the backend
// was expected bitwise parity and some row differs.
struct ParityTestCase {
  std::string name, message, details;
  bool failed = false;
};
std::optional<ParityTestCase> parity_junit_case(const BackendOutcome& b);

}  // namespace nvdet
