#pragma once
// The server probe's section of every report format (nvdet probe, op probe): the server and what
// it was asked, what it returned (compared at which level), each probed prompt's distinct
// completions with their counts alone and under load, and where runs part from the probe alone:
// the first differing token on both sides with their log probabilities, the alone run's top-1 /
// top-2 gap there, the largest log-probability difference while the tokens still agreed, and
// whether the same completion also came alone (then it is not the load's doing). Each function
// reads the result model only (lib/runner/probe_verdict.h) and returns nothing for an audit.
#include <string>
#include <utility>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

// Console: the lines under the endpoint's verdict.
std::string probe_console_lines(const AuditResult& r, const BackendOutcome& b);
// Markdown: a "## Server probe" section.
std::string probe_markdown_section(const AuditResult& r);
// HTML: a <section id="probe"> with the same tables.
std::string probe_html_section(const AuditResult& r);
// One sentence for a differing run: where it parts from the probe alone, both sides there
// ("prompt 0 at token 38 in concurrency=8, arrival=mid: ' river' (id 17, logprob -5.881) alone vs
// ..."), as the JUnit failures and the console say it.
std::string probe_difference_sentence(const AuditResult& r, const Divergence& d);
// JUnit: the endpoint suite's properties (server, level, control, completions, first
// difference).
std::vector<std::pair<std::string, std::string>> probe_junit_properties(const AuditResult& r,
                                                                        const BackendOutcome& b);

}  // namespace nvdet
