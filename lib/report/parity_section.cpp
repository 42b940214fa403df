#include "lib/report/parity_section.h"

#include <fmt/format.h>

#include "lib/report/html_report.h"
#include "lib/report/report_tables.h"
#include "lib/report/report_text.h"
#include "lib/runner/parity_metrics.h"
#include "lib/runner/verdict.h"

namespace nvdet {
namespace {

using report_text::context_label;
using report_text::short_number;
using Table = std::vector<std::vector<std::string>>;

std::string first_op_text(const std::optional<OpDivergence>& op) {
  if (!op) return "-";
  return describe_op_location(op->step, op->layer, op->op);
}

// A field of the run's fingerprint ("" when the report has none: written before it was kept).
std::string fingerprint_value(const AuditResult& r, const std::string& key) {
  const auto it = r.fingerprint.find(key);
  return it == r.fingerprint.end() ? "" : it->second;
}

// "the sampling distribution (temperature 0.8, top_k 50, top_p 0.9)".
std::string sampling_label(const AuditResult& r) {
  const std::string t = fingerprint_value(r, "model.sampling.temperature");
  if (t.empty()) return "the sampling distribution";
  return fmt::format("the sampling distribution (temperature {}, top_k {}, top_p {})", t,
                     fingerprint_value(r, "model.sampling.top_k"),
                     fingerprint_value(r, "model.sampling.top_p"));
}

// Who scored: each backend itself, or model.trainer's backend and tp.
std::string trainer_text(const AuditResult& r) {
  const std::string backend = fingerprint_value(r, "model.trainer.backend");
  const std::string tp = fingerprint_value(r, "model.trainer.tp");
  if (backend.empty() && tp.empty()) return "the decoding backend itself, at the context's tp";
  return fmt::format("{}, at {}", backend.empty() ? "the decoding backend" : "`" + backend + "`",
                     tp.empty() ? "the context's tp" : "tp " + tp);
}

std::string expectation_text(const BackendOutcome& b) {
  if (b.parity_expect != ParityExpectation::kTolerance) {
    return std::string(parity_expectation_name(b.parity_expect));
  }
  std::string limits;
  const ParityTolerance& t = b.parity_tolerance;
  if (t.mismatch_kl_max) limits += fmt::format("mismatch_kl_max {:.3g}", *t.mismatch_kl_max);
  if (t.logprob_abs_diff_max) {
    limits += fmt::format("{}logprob_abs_diff_max {:.3g}", limits.empty() ? "" : ", ",
                          *t.logprob_abs_diff_max);
  }
  return "within " + limits;
}

std::string metrics_text(const ParityMetrics& m) {
  return fmt::format("mismatch_kl mean {} max {}; logprob_abs_diff max {} mean {}; k3 mean {}",
                     short_number(m.mismatch_kl_mean), short_number(m.mismatch_kl_max),
                     short_number(m.logprob_abs_diff_max), short_number(m.logprob_abs_diff_mean),
                     short_number(m.k3_mean));
}

const std::vector<std::string> kMetricHeads = {
    "Tokens",          "Bitwise equal",        "mismatch_kl mean",
    "mismatch_kl max", "logprob_abs_diff max", "logprob_abs_diff mean",
    "k3 mean"};

// The columns every table shares, in one order: tokens, equal, the metrics.
std::vector<std::string> metric_cells(int64_t tokens, int64_t equal, const ParityMetrics& m) {
  return {std::to_string(tokens),
          std::to_string(equal),
          short_number(m.mismatch_kl_mean),
          short_number(m.mismatch_kl_max),
          short_number(m.logprob_abs_diff_max),
          short_number(m.logprob_abs_diff_mean),
          short_number(m.k3_mean)};
}

std::vector<std::string> with_metrics(std::vector<std::string> head,
                                      const std::vector<std::string>& tail = {}) {
  head.insert(head.end(), kMetricHeads.begin(), kMetricHeads.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool any_scored(const AuditResult& r) {
  for (const BackendOutcome& b : r.backends)
    if (b.parity) return true;
  return false;
}
bool any_sampled(const AuditResult& r) {
  for (const BackendOutcome& b : r.backends)
    if (b.parity && b.parity->sampling) return true;
  return false;
}

// One titled table of the section; Markdown and HTML render the same tables.
struct ParityTable {
  std::string title, caption;
  std::vector<std::string> heads;
  Table rows;
  bool folded = false;  // long: behind a <details> summary
};

std::vector<ParityTable> parity_tables(const AuditResult& r) {
  std::vector<ParityTable> out;
  const bool sampled = any_sampled(r);
  ParityTable t1{"At temperature 1",
                 "The logits as the kernels produced them: softmax over the whole vocabulary.",
                 with_metrics({"Backend", "Parity"}),
                 {}};
  ParityTable ts{"At " + sampling_label(r),
                 "What RL frameworks compare: both rows divided by the sampling temperature and "
                 "restricted to the tokens the sampler's top_k / top_p kept at that step.",
                 with_metrics({"Backend", "Parity"}),
                 {}};
  ParityTable first{"Where decode and scoring pass first part",
                    "",
                    {"Backend", "First differing token", "First op apart"},
                    {}};
  for (const BackendOutcome& b : r.backends) {
    if (!b.parity) continue;
    const ParitySummary& p = *b.parity;
    t1.rows.push_back(
        joined({b.name, expectation_text(b)}, metric_cells(p.tokens, p.bitwise_equal_tokens, p)));
    if (p.sampling) {
      ts.rows.push_back(joined({b.name, expectation_text(b)},
                               metric_cells(p.tokens, p.bitwise_equal_tokens, *p.sampling)));
    }
    first.rows.push_back({b.name,
                          p.first_context.empty()
                              ? "-"
                              : fmt::format("{}, request {}, token {}", p.first_context,
                                            p.first_request, p.first_token),
                          first_op_text(p.first_op)});
  }
  out.push_back(std::move(t1));
  if (sampled) out.push_back(std::move(ts));
  out.push_back(std::move(first));
  // Per scoring pass setting: how the trainer's batching and chunking moved the metrics.
  ParityTable by{"By scoring pass",
                 std::string("Each (score_batch, score_chunk) the sweep ran, its metrics ") +
                     (sampled ? "at the sampling distribution." : "at temperature 1."),
                 with_metrics({"Backend", "score_batch", "score_chunk"}),
                 {}};
  for (const BackendOutcome& b : r.backends) {
    if (!b.parity) continue;
    for (const ParityByScoring& g : parity_by_scoring(r, b.name)) {
      by.rows.push_back(joined(
          {b.name, g.score_batch, g.score_chunk},
          metric_cells(g.parity.tokens, g.parity.bitwise_equal_tokens, gated_metrics(g.parity))));
    }
  }
  out.push_back(std::move(by));
  // Per request of each case (at temperature 1), folded: a sweep of many contexts has many.
  ParityTable requests{
      "Per request",
      "",
      with_metrics({"Backend", "Context", "Request"}, {"First differing token", "First op apart"}),
      {},
      true};
  for (const CaseRecord& c : r.cases) {
    for (const RequestRecord& q : c.requests) {
      if (!q.parity) continue;
      const ParityRecord& p = *q.parity;
      requests.rows.push_back(joined(
          {c.backend,
           context_label(r, c.context_index, context_of(r, c).id) +
               (c.repeat ? fmt::format(" (repeat {})", c.repeat) : std::string()),
           std::to_string(q.request)},
          joined(metric_cells(p.tokens, p.bitwise_equal_tokens, p),
                 {p.first_differing_token < 0 ? "-" : std::to_string(p.first_differing_token),
                  first_op_text(p.first_op)})));
    }
  }
  requests.title += fmt::format(" ({} rows, at temperature 1)", requests.rows.size());
  out.push_back(std::move(requests));
  return out;
}

std::string section_intro(const AuditResult& r) {
  return "Each generated token's logits from the decode step (the sampler) against the scoring "
         "pass over prompt + completion (the trainer: " +
         trainer_text(r) +
         "), computed in double from both fp32 rows: mismatch_kl = KL(sampler || trainer); "
         "logprob_abs_diff = |log p_sampler - log p_trainer| of the sampled token; k3 = r - 1 - "
         "log r with r = p_trainer / p_sampler. Per-token logprobs are in the JSON report and the "
         "dumps.";
}

}  // namespace

std::string parity_sentence(const ParitySummary& p) {
  return fmt::format("{} of {} tokens bitwise equal; {}", p.bitwise_equal_tokens, p.tokens,
                     metrics_text(p));
}

std::string parity_console_lines(const AuditResult& r, const BackendOutcome& b) {
  if (!b.parity) return "";
  const ParitySummary& p = *b.parity;
  std::string s = fmt::format(
      "       sampler/trainer (expect {}): {} of {} tokens bitwise equal; at temperature 1: {}\n",
      expectation_text(b), p.bitwise_equal_tokens, p.tokens, metrics_text(p));
  if (p.sampling)
    s += fmt::format("       at {}: {}\n", sampling_label(r), metrics_text(*p.sampling));
  const std::vector<ParityByScoring> by = parity_by_scoring(r, b.name);
  if (by.size() > 1) {
    for (const ParityByScoring& g : by) {
      const ParityMetrics& m = gated_metrics(g.parity);
      s += fmt::format(
          "       score_batch={}, score_chunk={}: {} of {} tokens bitwise equal; mismatch_kl max "
          "{}, logprob_abs_diff max {}{}\n",
          g.score_batch, g.score_chunk, g.parity.bitwise_equal_tokens, g.parity.tokens,
          short_number(m.mismatch_kl_max), short_number(m.logprob_abs_diff_max),
          g.parity.sampling ? " (sampling distribution)" : "");
    }
  }
  if (!p.first_context.empty()) {
    s += fmt::format("       first differing token: {} in {}, request {}; first op apart: {}\n",
                     p.first_token, p.first_context, p.first_request, first_op_text(p.first_op));
  }
  return s;
}

std::string parity_markdown_section(const AuditResult& r) {
  if (!any_scored(r)) return "";
  std::string o = "\n## Sampler against trainer\n\n" + section_intro(r) + "\n";
  for (const ParityTable& t : parity_tables(r)) {
    const std::string table = markdown_table(t.heads, t.rows);
    if (t.folded) {
      o += "\n<details><summary>" + t.title + "</summary>\n\n" + table + "\n</details>\n";
      continue;
    }
    o += "\n### " + t.title + "\n\n" + (t.caption.empty() ? "" : t.caption + "\n\n") + table;
  }
  return o;
}

std::string parity_html_section(const AuditResult& r) {
  if (!any_scored(r)) return "";
  std::string o = "<section id=\"parity\">\n<h2>Sampler against trainer</h2>\n<p>" +
                  html_escape(section_intro(r)) + "</p>\n";
  for (const ParityTable& t : parity_tables(r)) {
    const std::string table = html_table(t.heads, t.rows);
    if (t.folded) {
      o += "<details><summary>" + html_escape(t.title) + "</summary>\n" + table + "</details>\n";
      continue;
    }
    o += "<h3>" + html_escape(t.title) + "</h3>\n" +
         (t.caption.empty() ? "" : "<p class=\"muted\">" + html_escape(t.caption) + "</p>\n") +
         table;
  }
  return o + "</section>\n";
}

std::optional<ParityTestCase> parity_junit_case(const BackendOutcome& b) {
  if (!b.parity || b.skipped) return std::nullopt;
  const ParitySummary& p = *b.parity;
  ParityTestCase t;
  t.name = b.name + "/sampler-trainer";
  t.details = parity_sentence(p);
  // The same decision as the verdict's (decide_parity_verdict): its sentence is the message.
  BackendOutcome judged = b;
  judged.passed = true;
  judged.verdict.clear();
  decide_parity_verdict(judged);
  t.failed = !judged.passed;
  if (t.failed) t.message = judged.verdict.substr(judged.verdict.find_first_not_of("; "));
  return t;
}

std::vector<std::pair<std::string, std::string>> parity_junit_properties(const AuditResult& r,
                                                                         const BackendOutcome& b) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!b.parity || b.skipped) return out;
  const ParitySummary& p = *b.parity;
  out.emplace_back("sampler_trainer", parity_sentence(p));
  if (p.sampling) out.emplace_back("sampler_trainer_sampling", metrics_text(*p.sampling));
  for (const ParityByScoring& g : parity_by_scoring(r, b.name)) {
    out.emplace_back(
        fmt::format("sampler_trainer[score_batch={},score_chunk={}]", g.score_batch, g.score_chunk),
        fmt::format("{} of {} tokens bitwise equal; {}{}", g.parity.bitwise_equal_tokens,
                    g.parity.tokens, metrics_text(gated_metrics(g.parity)),
                    g.parity.sampling ? " (at the sampling distribution)" : ""));
  }
  return out;
}

}  // namespace nvdet
