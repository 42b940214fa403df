#include "lib/report/parity_section.h"

#include <fmt/format.h>

#include "lib/report/html_report.h"
#include "lib/report/report_tables.h"
#include "lib/report/report_text.h"

namespace nvdet {
namespace {

using report_text::context_label;
using report_text::short_number;

std::string first_op_text(const std::optional<OpDivergence>& op) {
  if (!op) return "-";
  return fmt::format("step {}, layer {}, op {}", op->step, op->layer, op->op);
}

// The columns every table shares, in one order: tokens, equal, the metrics.
std::vector<std::string> metric_cells(int64_t tokens, int64_t equal, double kl_mean, double kl_max,
                                      double lp_max, double lp_mean, double k3) {
  return {std::to_string(tokens), std::to_string(equal), short_number(kl_mean),
          short_number(kl_max),   short_number(lp_max),  short_number(lp_mean),
          short_number(k3)};
}

const std::vector<std::string> kMetricHeads = {
    "Tokens",          "Bitwise equal",        "mismatch_kl mean",
    "mismatch_kl max", "logprob_abs_diff max", "logprob_abs_diff mean",
    "k3 mean"};

bool any_scored(const AuditResult& r) {
  for (const BackendOutcome& b : r.backends)
    if (b.parity) return true;
  return false;
}

// Rows of the per-request table: backend, context, request, metrics, first token, first op.
std::vector<std::vector<std::string>> request_rows(const AuditResult& r) {
  std::vector<std::vector<std::string>> rows;
  for (const CaseRecord& c : r.cases) {
    for (const RequestRecord& q : c.requests) {
      if (!q.parity) continue;
      const ParityRecord& p = *q.parity;
      std::vector<std::string> row = {
          c.backend,
          context_label(r, c.context_index, context_of(r, c).id) +
              (c.repeat ? fmt::format(" (repeat {})", c.repeat) : std::string()),
          std::to_string(q.request)};
      for (std::string& m :
           metric_cells(p.tokens, p.bitwise_equal_tokens, p.mismatch_kl_mean, p.mismatch_kl_max,
                        p.logprob_abs_diff_max, p.logprob_abs_diff_mean, p.k3_mean))
        row.push_back(std::move(m));
      row.push_back(p.first_differing_token < 0 ? "-" : std::to_string(p.first_differing_token));
      row.push_back(first_op_text(p.first_op));
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<std::string> backend_row(const BackendOutcome& b) {
  const ParitySummary& p = *b.parity;
  std::vector<std::string> row = {b.name, std::string(parity_expectation_name(b.parity_expect))};
  for (std::string& m :
       metric_cells(p.tokens, p.bitwise_equal_tokens, p.mismatch_kl_mean, p.mismatch_kl_max,
                    p.logprob_abs_diff_max, p.logprob_abs_diff_mean, p.k3_mean))
    row.push_back(std::move(m));
  row.push_back(p.first_context.empty() ? "-"
                                        : fmt::format("{}, request {}, token {}", p.first_context,
                                                      p.first_request, p.first_token));
  row.push_back(first_op_text(p.first_op));
  return row;
}

std::vector<std::string> with_metrics(std::vector<std::string> head,
                                      std::vector<std::string> tail) {
  head.insert(head.end(), kMetricHeads.begin(), kMetricHeads.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

const char* kSectionIntro =
    "Each generated token's logits from the decode step (the sampler) against the scoring "
    "pass over prompt + completion (the trainer), computed in double from both fp32 rows: "
    "mismatch_kl = KL(sampler || trainer) over the vocabulary; logprob_abs_diff = |log p_sampler "
    "- log p_trainer| of the sampled token; k3 = r - 1 - log r with r = p_trainer / p_sampler.";

}  // namespace

std::string parity_sentence(const ParitySummary& p) {
  return fmt::format(
      "{} of {} tokens bitwise equal; mismatch_kl mean {} max {}; logprob_abs_diff max {} mean {}; "
      "k3 mean {}",
      p.bitwise_equal_tokens, p.tokens, short_number(p.mismatch_kl_mean),
      short_number(p.mismatch_kl_max), short_number(p.logprob_abs_diff_max),
      short_number(p.logprob_abs_diff_mean), short_number(p.k3_mean));
}

std::string parity_console_lines(const BackendOutcome& b) {
  if (!b.parity) return "";
  const ParitySummary& p = *b.parity;
  std::string s = fmt::format("       sampler/trainer (expect {}): {}\n",
                              parity_expectation_name(b.parity_expect), parity_sentence(p));
  if (!p.first_context.empty()) {
    s += fmt::format("       first differing token: {} in {}, request {}; first op apart: {}\n",
                     p.first_token, p.first_context, p.first_request, first_op_text(p.first_op));
  }
  return s;
}

std::string parity_markdown_section(const AuditResult& r) {
  if (!any_scored(r)) return "";
  std::vector<std::vector<std::string>> rows;
  for (const BackendOutcome& b : r.backends)
    if (b.parity) rows.push_back(backend_row(b));
  std::string o = "\n## Sampler against trainer\n\n" + std::string(kSectionIntro) + "\n\n";
  o += markdown_table(with_metrics({"Backend", "Parity"}, {"First differing", "First op apart"}),
                      rows);
  o += "\n" + markdown_table(with_metrics({"Backend", "Context", "Request"},
                                          {"First differing token", "First op apart"}),
                             request_rows(r));
  return o;
}

std::string parity_html_section(const AuditResult& r) {
  if (!any_scored(r)) return "";
  std::vector<std::vector<std::string>> rows;
  for (const BackendOutcome& b : r.backends)
    if (b.parity) rows.push_back(backend_row(b));
  std::string o = "<section id=\"parity\">\n<h2>Sampler against trainer</h2>\n<p>" +
                  html_escape(kSectionIntro) + "</p>\n";
  o += html_table(with_metrics({"Backend", "Parity"}, {"First differing", "First op apart"}), rows);
  o += html_table(
      with_metrics({"Backend", "Context", "Request"}, {"First differing token", "First op apart"}),
      request_rows(r));
  return o + "</section>\n";
}

std::optional<ParityTestCase> parity_junit_case(const BackendOutcome& b) {
  if (!b.parity || b.skipped) return std::nullopt;
  const ParitySummary& p = *b.parity;
  ParityTestCase t;
  t.name = b.name + "/sampler-trainer";
  t.details = parity_sentence(p);
  t.failed = b.parity_expect == ParityExpectation::kBitwise && p.bitwise_equal_tokens != p.tokens;
  if (t.failed) {
    t.message = fmt::format(
        "expected bitwise sampler/trainer parity, but {} of {} tokens differ; first at {}, "
        "request {}, token {}",
        p.tokens - p.bitwise_equal_tokens, p.tokens, p.first_context, p.first_request,
        p.first_token);
  }
  return t;
}

}  // namespace nvdet
