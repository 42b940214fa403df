#include "lib/report/markdown_report.h"

#include <absl/strings/str_join.h>

#include <set>
#include <sstream>

#include "lib/report/parity_section.h"
#include "lib/report/probe_section.h"
#include "lib/report/report_text.h"
#include "lib/report/traffic_section.h"
#include "lib/report/verify_report.h"
#include "lib/scenario/scenario.h"

namespace nvdet {
namespace {

using namespace report_text;

constexpr size_t kMaxDivergenceRows = 20;

// Free text (descriptions, verdicts, notes): '<' and '>' as entities so that nothing in a name
// or note is taken for HTML by a Markdown renderer (GitHub renders raw HTML in job summaries).
std::string text(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out += c;
    }
  }
  return out;
}

// Table cells: a '|' would split the cell (even inside a code span) and a newline would end the
// table.
std::string table_safe(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string cell(const std::string& raw) { return table_safe(text(raw)); }

std::string code(const std::string& s) { return "`" + s + "`"; }

std::string scenario_line(const AuditResult& r) {
  const ScenarioSummary& s = r.scenario;
  std::ostringstream o;
  o << "**Scenario** " << code(s.name);
  if (!s.path.empty()) o << " (" << code(s.path) << ")";
  o << ": op " << code(s.op) << ", " << s.dtype;
  if (!s.out_dtype.empty() && s.out_dtype != s.dtype) o << " \u2192 " << s.out_dtype;
  o << ", seed " << s.seed;
  std::vector<std::string> requests;
  for (const int64_t q : s.requests) requests.push_back(std::to_string(q));
  if (!requests.empty()) o << ", requests " << absl::StrJoin(requests, ", ");
  o << ", repeat " << s.repeat;
  std::vector<std::string> axes;
  for (const auto& [name, values] : s.axes) {
    if (values.size() <= 6) {
      axes.push_back(name + " (" + absl::StrJoin(values, ", ") + ")");
    } else {
      axes.push_back(name + " (" + std::to_string(values.size()) + " values: " + values.front() +
                     " \u2026 " + values.back() + ")");
    }
  }
  if (!axes.empty()) o << ". Sweep: " << absl::StrJoin(axes, " \u00d7 ");
  o << ".";
  return o.str();
}

void write_backend_table(std::ostringstream& o, const AuditResult& r) {
  o << "| Backend | Expectation | Contexts | Divergent contexts | Run-to-run | Distinct results "
       "| Verdict |\n";
  o << "|---|---|---:|---:|---:|---:|---|\n";
  for (const BackendOutcome& b : r.backends) {
    if (b.skipped) {
      o << "| " << table_safe(code(b.name)) << " | " << expectation_name(b.expect)
        << " | 0 | \u2013 | \u2013 | \u2013 | skipped: " << cell(b.skip_reason) << " |\n";
      continue;
    }
    o << "| " << table_safe(code(b.name)) << " | " << expectation_name(b.expect) << " | "
      << b.contexts_run << " | " << b.divergent_contexts << " | " << b.run_to_run_divergences
      << " | " << b.max_distinct_results << " | " << (b.passed ? "\u2713 " : "\u2717 ")
      << cell(b.verdict) << " |\n";
  }
}

// Model scenarios: each case's wall time and tokens/s (batch x max_new_tokens over the case's
// seconds, prefill and hashing included), so that an audit's cost per context is a number.
void write_throughput_table(std::ostringstream& o, const AuditResult& r) {
  const std::vector<const CaseRecord*> cases = decoding_cases(r);
  if (cases.empty()) return;
  o << "\n## Decode throughput\n\n| Backend | Context | Seconds | Tokens | Tokens/s |\n"
       "|---|---|---:|---:|---:|\n";
  for (const CaseRecord* case_record : cases) {
    const CaseRecord& c = *case_record;
    o << "| " << table_safe(code(c.backend)) << " | "
      << cell(context_label(r, c.context_index, context_of(r, c).id) +
              (c.repeat > 0 ? " (repeat " + std::to_string(c.repeat) + ")" : ""))
      << " | " << short_number(c.seconds) << " | " << c.generated_tokens << " | "
      << short_number(tokens_per_second(c)) << " |\n";
  }
}

// Model scenarios: the token-level result the console shows, per backend, so that a CI artifact
// says whether any token changed: distinct completions, the first token flip with its margin,
// and the first op whose bits parted.
void write_token_level(std::ostringstream& o, const AuditResult& r) {
  std::ostringstream rows;
  for (const BackendOutcome& b : r.backends) {
    const auto t = token_level_result(r, b);
    if (!t) continue;
    rows << "| " << table_safe(code(b.name)) << " | "
         << cell(t->completions.empty() ? "-" : t->completions) << " | "
         << cell(t->first_flip.empty() ? "none: every token matched the baseline's" : t->first_flip)
         << " | " << cell(t->first_op.empty() ? "-" : t->first_op) << " |\n";
  }
  if (rows.str().empty()) return;
  o << "\n## Token-level result\n\n| Backend | Completions | First token flip | First op whose "
       "bits parted |\n|---|---|---|---|\n"
    << rows.str();
}

// Serving traffic: per probed request the distinct completions of its replays and how many
// replays gave each, and where the first replay apart parted (traffic_section.h).
void write_traffic(std::ostringstream& o, const AuditResult& r) {
  const std::optional<TrafficReport> t = traffic_report(r);
  if (!t) return;
  o << "\n## Serving traffic\n\n" << text(t->summary) << ".\n";
  for (const TrafficTable* table : {&t->replays, &t->partings}) {
    if (table->rows.empty()) continue;
    o << "\n|";
    for (const std::string& h : table->heads) o << " " << h << " |";
    o << "\n|";
    for (size_t i = 0; i < table->heads.size(); ++i) o << "---|";
    o << "\n";
    for (const std::vector<std::string>& row : table->rows) {
      o << "|";
      for (size_t i = 0; i < row.size(); ++i)
        o << " " << (i == 0 ? code(row[i]) : cell(row[i])) << " |";
      o << "\n";
    }
  }
}

void write_divergence_table(std::ostringstream& o, const AuditResult& r,
                            const std::vector<const Divergence*>& divs) {
  o << "| Request | Token | Context | Element | a | b | Bits a \u2192 b | ULP | max \\|\u0394\\| "
       "| Mismatching | Notes that differ |\n";
  o << "|---:|---:|---|---|---:|---:|---|---:|---:|---|---|\n";
  for (size_t i = 0; i < divs.size() && i < kMaxDivergenceRows; ++i) {
    const Divergence& d = *divs[i];
    const FirstMismatch& m = d.first_mismatch;
    std::string context = context_label(r, d.context_index, d.context);
    if (d.kind == DivergenceKind::kRunToRun)
      context += " (repeat " + std::to_string(d.repeat) + " vs 0)";
    const std::string mismatching = plural(d.mismatch_count, "element", "elements") + ", " +
                                    std::to_string(d.mismatched_tokens) + "/" +
                                    std::to_string(d.tokens) + " tokens";
    const auto notes = notes_that_differ(d.baseline_notes, d.notes);
    o << "| " << d.request << " | " << d.token << " | " << cell(context) << " | "
      << cell(named_coords(m.coords, r.scenario.coord_names)) << " | " << exact_number(m.a) << " | "
      << exact_number(m.b) << " | " << code(m.a_bits) << " \u2192 " << code(m.b_bits) << " | "
      << ulp_text(m.ulp) << " | " << short_number(d.max_abs_diff) << " | " << cell(mismatching)
      << " | " << cell(notes.empty() ? "none" : absl::StrJoin(notes, "; ")) << " |\n";
  }
  if (divs.size() > kMaxDivergenceRows) {
    o << "\n"
      << divs.size() - kMaxDivergenceRows
      << " more divergences of this backend are in the JSON report.\n";
  }
}

void write_backend_details(std::ostringstream& o, const AuditResult& r, const BackendOutcome& b) {
  std::vector<const Divergence*> divs;
  std::map<int, std::string> changed_contexts;  // index -> id
  std::set<int64_t> requests;
  const Divergence* baseline = nullptr;  // the first context divergence names the baseline
  int run_to_run = 0;
  for (const Divergence& d : r.divergences) {
    if (d.backend != b.name) continue;
    divs.push_back(&d);
    requests.insert(d.request);
    if (d.kind == DivergenceKind::kRunToRun) {
      ++run_to_run;
    } else {
      changed_contexts.emplace(d.context_index, d.context);
      if (!baseline) baseline = &d;
    }
  }
  if (divs.empty()) return;

  o << "\n### " << code(b.name) << "\n\n";
  std::vector<std::string> request_list;
  for (const int64_t q : requests) request_list.push_back(std::to_string(q));
  o << plural(static_cast<int64_t>(divs.size()), "divergence", "divergences") << " in "
    << plural(static_cast<int64_t>(requests.size()), "request", "requests") << " ("
    << absl::StrJoin(request_list, ", ") << ").";
  if (run_to_run > 0) {
    o << " Run-to-run: " << run_to_run << " (the same context gave different bits on a repeat).";
  }
  o << "\n";
  if (!changed_contexts.empty()) {
    const auto lines = describe_context_set(r, changed_contexts);
    o << "\nDiffers from "
      << code(context_label(r, baseline->baseline_context_index, baseline->baseline_context))
      << " at";
    if (lines.size() == 1) {
      o << " " << text(lines.front()) << ".\n";
    } else {
      o << ":\n\n";
      for (const std::string& line : lines) o << "- " << text(line) << "\n";
    }
  }
  if (!b.stands_for.empty()) {
    o << "\nStands for ";
    o << text(absl::StrJoin(stands_for_lines(b, r.scenario.op), "; ")) << ".\n";
  }
  o << "\n";
  write_divergence_table(o, r, divs);
}

constexpr size_t kMaxVerifyRows = 20;

// With --verify: the manifest check, which takes part in the verdict in the title.
void write_verify(std::ostringstream& o, const AuditResult& r) {
  const VerifyResult& v = *r.verify;
  o << "\n## Manifest " << code(v.manifest) << ": "
    << (v.passed ? "\u2713 verified" : "\u2717 FAILED") << "\n\n"
    << text(v.verdict) << ".\n\n";
  if (v.environment.empty()) {
    o << "Environment unchanged since the recording.\n";
  } else {
    o << "Environment changes since the recording:\n\n";
    for (const std::string& e : v.environment) o << "- " << text(e) << "\n";
  }
  if (!v.changes.empty()) {
    o << "\n| Backend | Expectation | Context | Repeat | Request | First changed token | Recorded "
         "| Now | Fails |\n|---|---|---|---:|---:|---:|---|---|---|\n";
    for (size_t i = 0; i < v.changes.size() && i < kMaxVerifyRows; ++i) {
      const ManifestChange& c = v.changes[i];
      const auto [recorded, now] = short_hashes(c.recorded, c.now);
      o << "| " << table_safe(code(c.backend)) << " | "
        << cell(c.expectation.empty() ? "not run now" : c.expectation) << " | "
        << cell(context_label(r, c.context_index, c.context)) << " | " << c.repeat << " | "
        << c.request << " | "
        << (c.first_token >= 0 ? std::to_string(c.first_token) : std::string("n/a")) << " | "
        << code(recorded) << " | " << code(now) << " | " << (c.fails ? "\u2717 yes" : "no")
        << " |\n";
    }
    if (v.changes.size() > kMaxVerifyRows) {
      o << "\n" << v.changes.size() - kMaxVerifyRows << " more changes are in the JSON report.\n";
    }
  }
  if (!v.missing.empty() || !v.added.empty()) {
    o << "\n"
      << plural(static_cast<int64_t>(v.missing.size()), "recorded entry", "recorded entries")
      << " not run, " << plural(static_cast<int64_t>(v.added.size()), "new entry", "new entries")
      << " (listed in the JSON report).\n";
  }
}

}  // namespace

std::string render_markdown_report(const AuditResult& r) {
  std::ostringstream o;
  const AuditSummary& s = r.summary;
  o << "# "
    << (ran_nothing(r) ? "\u2205 NOTHING RAN"
        : s.passed     ? "\u2713 PASS"
                       : "\u2717 FAIL")
    << ": nvdet " << command_name(r) << " " << code(r.scenario.name) << "\n\n";
  if (!r.scenario.description.empty()) o << text(r.scenario.description) << "\n\n";
  o << scenario_line(r) << "\n\n";
  o << "**Device** " << device_line(r.system) << ".\n\n";
  o << plural(s.backends, "backend", "backends") << ", "
    << plural(s.contexts, "context", "contexts") << ", " << plural(s.cases, "case", "cases") << ", "
    << plural(s.divergences, "divergence", "divergences") << "; "
    << plural(s.failed_backends, "backend failed its expectation",
              "backends failed their expectation")
    << (s.skipped_backends
            ? "; " + plural(s.skipped_backends, "backend skipped", "backends skipped")
            : std::string())
    << "; " << short_number(s.seconds) << " s.\n\n";
  if (r.verify) {
    o << "**Manifest** " << code(r.verify->manifest) << ": "
      << (r.verify->passed ? "verified" : "**verify FAILED**") << " (" << text(r.verify->verdict)
      << ").\n\n";
  }
  write_backend_table(o, r);
  write_throughput_table(o, r);
  write_token_level(o, r);
  write_traffic(o, r);
  o << parity_markdown_section(r);
  o << probe_markdown_section(r);  // a probe's runs, in its own terms (instead of the details)
  if (!r.probe)
    for (const BackendOutcome& b : r.backends) write_backend_details(o, r, b);
  if (r.verify) write_verify(o, r);
  return o.str();
}

}  // namespace nvdet
