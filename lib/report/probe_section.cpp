#include "lib/report/probe_section.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <cmath>

#include "lib/core/text_excerpt.h"
#include "lib/report/html_report.h"
#include "lib/report/report_tables.h"
#include "lib/report/report_text.h"
#include "lib/runner/probe_verdict.h"

namespace nvdet {
namespace {

using report_text::context_label;
using report_text::short_number;

constexpr size_t kMaxRows = 20;        // divergences listed per format (all are in the JSON)
constexpr size_t kMaxCompletions = 8;  // distinct completions listed per prompt

std::string quoted(const std::string& text, size_t chars = 60) {
  return "'" + excerpt(text, chars) + "'";
}

std::string number_or_dash(double v) { return std::isnan(v) ? "-" : short_number(v); }

std::string server_sentence(const ProbeRun& p) {
  std::string s =
      fmt::format("{} (model {}, {} API{})", p.url, p.model, p.api, p.stream ? ", streamed" : "");
  if (!p.headers.empty()) s += "; headers from the environment: " + absl::StrJoin(p.headers, ", ");
  if (p.body_json != "{}") s += "; hints " + p.body_json;
  s += fmt::format("; max_tokens {}, temperature {}", p.max_tokens, short_number(p.temperature));
  if (p.seed) s += fmt::format(", seed {}", *p.seed);
  if (p.logprobs > 0) s += fmt::format(", {} log probabilities asked for per token", p.logprobs);
  return s;
}

std::string level_sentence(const ProbeRun& p) {
  const std::string what = p.level == "logprobs" ? "tokens and their log probabilities"
                           : p.level == "tokens" ? "tokens, without log probabilities"
                                                 : "text only";
  return fmt::format(
      "compared bit for bit at the finest level the server returned: {}; the "
      "control ran each prompt alone {} times before any load",
      what, p.control);
}

// "prompt 0 at token 38 in probe(...) (repeat 1): ' river' (id 17, logprob -5.881) vs ..."
std::string difference_sentence(const AuditResult& r, const Divergence& d) {
  const ServedDivergence& s = *d.served;
  const std::string where = fmt::format("{}{}", context_label(r, d.context_index, d.context),
                                        d.repeat ? fmt::format(" (repeat {})", d.repeat) : "");
  if (!s.by_token) {
    return fmt::format("prompt {} at byte {} of its text in {}: {} vs {}", d.request, s.position,
                       where, quoted(s.baseline_piece), quoted(s.piece));
  }
  if (s.position < 0) {
    return fmt::format(
        "prompt {} in {}: the same tokens, other log probabilities (largest "
        "difference {})",
        d.request, where, short_number(d.max_abs_diff));
  }
  const auto side = [](const std::string& piece, int32_t id, double lp) {
    std::string t = piece.empty() && std::isnan(lp) ? "(end)" : quoted(piece, 24);
    std::vector<std::string> facts;
    if (id >= 0) facts.push_back(fmt::format("id {}", id));
    if (!std::isnan(lp)) facts.push_back("logprob " + short_number(lp));
    return facts.empty() ? t : t + " (" + absl::StrJoin(facts, ", ") + ")";
  };
  std::string out = fmt::format(
      "prompt {} at token {} in {}: {} alone vs {}", d.request, s.position, where,
      side(s.baseline_piece, s.baseline_id, s.baseline_logprob), side(s.piece, s.id, s.logprob));
  if (!std::isnan(s.baseline_top_gap))
    out += "; the alone run's top-1/top-2 gap there " + short_number(s.baseline_top_gap);
  return out;
}

// The first divergence to show: the load's doing first, else any.
const Divergence* first_shown(const AuditResult& r, const std::string& backend) {
  const Divergence* any = nullptr;
  for (const Divergence& d : r.divergences) {
    if (d.backend != backend || !d.served) continue;
    if (!any) any = &d;
    if (d.kind == DivergenceKind::kContext && !d.served->seen_alone) return &d;
  }
  return any;
}

// The first divergence whose tokens (or text) part, when the first shown only moved log
// probabilities; null otherwise.
const Divergence* first_flip(const AuditResult& r, const std::string& backend) {
  const Divergence* shown = first_shown(r, backend);
  if (!shown || !shown->served->by_token || shown->served->position >= 0) return nullptr;
  for (const Divergence& d : r.divergences)
    if (d.backend == backend && d.served && d.served->position >= 0) return &d;
  return nullptr;
}

// The largest log-probability difference while both runs chose the same tokens, and where.
const Divergence* largest_drift(const AuditResult& r, const std::string& backend) {
  const Divergence* best = nullptr;
  for (const Divergence& d : r.divergences)
    if (d.backend == backend && d.served && (!best || d.max_abs_diff > best->max_abs_diff))
      best = &d;
  return best && best->max_abs_diff > 0 ? best : nullptr;
}

std::string prompt_label(const AuditResult& r, int64_t request) {
  const ProbeRun& p = *r.probe;
  for (size_t i = 0; i < r.scenario.requests.size() && i < p.prompts.size(); ++i)
    if (r.scenario.requests[i] == request)
      return fmt::format("{} {}", request, quoted(p.prompts[i], 40));
  return std::to_string(request);
}

std::string completion_counts(const ProbedPrompt& p) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < p.distinct.size() && i < kMaxCompletions; ++i) {
    const DistinctCompletion& d = p.distinct[i];
    parts.push_back(
        fmt::format("#{} {} alone + {} under load", i + 1, d.runs_alone, d.runs_loaded));
  }
  if (p.distinct.size() > kMaxCompletions)
    parts.push_back(fmt::format("{} more", p.distinct.size() - kMaxCompletions));
  return absl::StrJoin(parts, ", ");
}

TableRows prompt_rows(const AuditResult& r, const ProbeAnalysis& a) {
  TableRows rows;
  for (const ProbedPrompt& p : a.prompts) {
    rows.push_back({prompt_label(r, p.request), std::to_string(p.distinct.size()),
                    std::to_string(p.alone_distinct), std::to_string(p.runs_alone),
                    std::to_string(p.runs_loaded), std::to_string(p.loaded_differing),
                    std::to_string(p.loaded_never_alone)});
  }
  return rows;
}
const std::vector<std::string> kPromptHeads = {
    "Prompt",          "Distinct completions", "Distinct alone",  "Runs alone",
    "Runs under load", "Differ from alone",    "Never seen alone"};

// How a completion's text compares with the first one's: most completions that differ in bits
// read the same.
std::string text_against_first(const ProbedPrompt& p, size_t i) {
  if (i == 0) return "-";
  const std::string &a = p.distinct[0].text, &b = p.distinct[i].text;
  if (a == b) return "the same text (other bits)";
  size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  return fmt::format("parts at byte {}: {}", at, quoted(b.substr(at), 24));
}

TableRows completion_rows(const AuditResult& r, const ProbedPrompt& p) {
  TableRows rows;
  for (size_t i = 0; i < p.distinct.size() && i < kMaxCompletions; ++i) {
    const DistinctCompletion& d = p.distinct[i];
    rows.push_back({fmt::format("#{}", i + 1), std::to_string(d.runs_alone),
                    std::to_string(d.runs_loaded),
                    context_label(r, d.first_context_index, "") +
                        (d.first_repeat ? fmt::format(" (repeat {})", d.first_repeat) : ""),
                    text_against_first(p, i), quoted(d.text, 80)});
  }
  return rows;
}
const std::vector<std::string> kCompletionHeads = {"Completion", "Runs alone", "Runs under load",
                                                   "First seen", "Against #1", "Text"};

TableRows divergence_rows(const AuditResult& r) {
  TableRows rows;
  for (const Divergence& d : r.divergences) {
    if (!d.served) continue;
    if (rows.size() == kMaxRows) break;
    const ServedDivergence& s = *d.served;
    const bool flip = !s.by_token || s.position >= 0;
    rows.push_back({std::to_string(d.request), context_label(r, d.context_index, d.context),
                    std::to_string(d.repeat),
                    flip ? fmt::format("{} {}", s.by_token ? "token" : "byte", s.position) : "none",
                    flip ? quoted(s.baseline_piece, 24) : "-", number_or_dash(s.baseline_logprob),
                    flip ? quoted(s.piece, 24) : "-", number_or_dash(s.logprob),
                    number_or_dash(s.baseline_top_gap),
                    s.by_token ? short_number(d.max_abs_diff) : "-",
                    s.seen_alone ? "yes: not the load's doing" : "no"});
  }
  return rows;
}
const std::vector<std::string> kDivergenceHeads = {"Prompt",
                                                   "Context",
                                                   "Repeat",
                                                   "First difference",
                                                   "Alone",
                                                   "Logprob alone",
                                                   "This run",
                                                   "Logprob here",
                                                   "Alone top-1/top-2 gap",
                                                   "Max |Δ logprob|, same tokens",
                                                   "Seen alone"};

std::string more_rows(const AuditResult& r) {
  size_t served = 0;
  for (const Divergence& d : r.divergences) served += d.served ? 1 : 0;
  return served > kMaxRows
             ? fmt::format("{} more differing runs are in the JSON report.", served - kMaxRows)
             : "";
}

}  // namespace

std::string probe_difference_sentence(const AuditResult& r, const Divergence& d) {
  return d.served ? difference_sentence(r, d) : "";
}

std::string probe_console_lines(const AuditResult& r, const BackendOutcome& b) {
  if (!r.probe || b.skipped) return "";
  const ProbeRun& p = *r.probe;
  const ProbeAnalysis a = analyze_probe(r, b.name);
  std::string s = "       server: " + server_sentence(p) + "\n";
  s += "       " + level_sentence(p) + "\n";
  for (const ProbedPrompt& q : a.prompts) {
    s += fmt::format("       prompt {}: {} over {} runs ({})\n", prompt_label(r, q.request),
                     report_text::plural(static_cast<int64_t>(q.distinct.size()),
                                         "distinct completion", "distinct completions"),
                     q.runs_alone + q.runs_loaded, completion_counts(q));
  }
  if (const Divergence* d = first_shown(r, b.name))
    s += "       first difference: " + difference_sentence(r, *d) + "\n";
  if (const Divergence* d = first_flip(r, b.name))
    s += "       first token flip: " + difference_sentence(r, *d) + "\n";
  if (const Divergence* d = largest_drift(r, b.name))
    s += fmt::format(
        "       largest logprob difference while the tokens agreed: {} (prompt {} in "
        "{})\n",
        short_number(d->max_abs_diff), d->request, context_label(r, d->context_index, d->context));
  return s;
}

std::string probe_markdown_section(const AuditResult& r) {
  if (!r.probe || r.backends.empty()) return "";
  const BackendOutcome& b = r.backends.front();
  const ProbeAnalysis a = analyze_probe(r, b.name);
  std::string o = "\n## Server probe\n\n**Server** " + server_sentence(*r.probe) + ".\n\n" +
                  "Runs " + level_sentence(*r.probe) + ".\n\n";
  o += markdown_table(kPromptHeads, prompt_rows(r, a));
  for (const ProbedPrompt& p : a.prompts) {
    o += "\n### Completions of prompt " + prompt_label(r, p.request) + "\n\n";
    o += markdown_table(kCompletionHeads, completion_rows(r, p));
  }
  if (const Divergence* d = first_shown(r, b.name))
    o += "\n**First difference**: " + difference_sentence(r, *d) + ".\n";
  if (const Divergence* d = first_flip(r, b.name))
    o += "\n**First token flip**: " + difference_sentence(r, *d) + ".\n";
  const TableRows rows = divergence_rows(r);
  if (!rows.empty()) {
    o += "\n### Runs that part from the probe alone\n\n" + markdown_table(kDivergenceHeads, rows);
    if (const std::string more = more_rows(r); !more.empty()) o += "\n" + more + "\n";
  }
  return o;
}

std::string probe_html_section(const AuditResult& r) {
  if (!r.probe || r.backends.empty()) return "";
  const BackendOutcome& b = r.backends.front();
  const ProbeAnalysis a = analyze_probe(r, b.name);
  std::string o = "<section id=\"probe\">\n<h2>Server probe</h2>\n<p><b>Server</b> " +
                  html_escape(server_sentence(*r.probe)) + ".</p>\n<p>Runs " +
                  html_escape(level_sentence(*r.probe)) + ".</p>\n";
  o += html_table(kPromptHeads, prompt_rows(r, a));
  for (const ProbedPrompt& p : a.prompts) {
    o += "<h3>Completions of prompt " + html_escape(prompt_label(r, p.request)) + "</h3>\n";
    o += html_table(kCompletionHeads, completion_rows(r, p));
  }
  if (const Divergence* d = first_shown(r, b.name))
    o += "<p><b>First difference</b>: " + html_escape(difference_sentence(r, *d)) + ".</p>\n";
  if (const Divergence* d = first_flip(r, b.name))
    o += "<p><b>First token flip</b>: " + html_escape(difference_sentence(r, *d)) + ".</p>\n";
  const TableRows rows = divergence_rows(r);
  if (!rows.empty()) {
    o += "<h3>Runs that part from the probe alone</h3>\n" + html_table(kDivergenceHeads, rows);
    if (const std::string more = more_rows(r); !more.empty())
      o += "<p class=\"muted\">" + html_escape(more) + "</p>\n";
  }
  return o + "</section>\n";
}

std::vector<std::pair<std::string, std::string>> probe_junit_properties(const AuditResult& r,
                                                                        const BackendOutcome& b) {
  if (!r.probe || b.skipped) return {};
  const ProbeAnalysis a = analyze_probe(r, b.name);
  std::vector<std::pair<std::string, std::string>> out = {
      {"server", server_sentence(*r.probe)},
      {"compared_at", r.probe->level},
      {"runs_alone", std::to_string(a.runs_alone)},
      {"runs_under_load", std::to_string(a.runs_loaded)},
      {"runs_differing_from_alone", std::to_string(a.loaded_differing)},
      {"runs_never_seen_alone", std::to_string(a.loaded_never_alone)}};
  for (const ProbedPrompt& p : a.prompts)
    out.emplace_back(fmt::format("prompt_{}_completions", p.request), completion_counts(p));
  if (const Divergence* d = first_shown(r, b.name))
    out.emplace_back("first_difference", difference_sentence(r, *d));
  if (const Divergence* d = first_flip(r, b.name))
    out.emplace_back("first_token_flip", difference_sentence(r, *d));
  return out;
}

}  // namespace nvdet
