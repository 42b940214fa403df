// One verdict everywhere: for a passing audit, a failing expectation, a failing manifest
// verification and an audit with a skipped backend, the console summary, JSON, Markdown, HTML and
// JUnit reports and the GitHub annotations all state the verdict that the exit code states.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "lib/report/ci_output.h"
#include "lib/report/console_summary.h"
#include "lib/report/html_report.h"
#include "lib/report/json_report.h"
#include "lib/report/junit_report.h"
#include "lib/report/markdown_report.h"
#include "lib/report/verify_report.h"
#include "lib/runner/audit.h"
#include "tests/report_sample_result.h"

namespace nvdet {
namespace {

using testing::make_sample_audit_result;
using testing::sample_context_id;

// The sample with its two failing backends (and their divergences) removed: every expectation
// holds. Contexts are grouped by position, as a request-defining axis would group them.
AuditResult passing_result() {
  AuditResult r = make_sample_audit_result();
  auto failing = [](const std::string& name) {
    return name == "cpu-invariant" || name == "cpu-canary";
  };
  std::erase_if(r.backends, [&](const BackendOutcome& b) { return failing(b.name); });
  std::erase_if(r.cases, [&](const CaseRecord& c) { return failing(c.backend); });
  std::erase_if(r.divergences, [&](const Divergence& d) { return failing(d.backend); });
  for (Context& c : r.contexts) c.group = "position=" + axis_value_string(c.values.at(1).second);
  r.summary.passed = true;
  r.summary.backends = 2;
  r.summary.failed_backends = 0;
  r.summary.cases = static_cast<int>(r.cases.size());
  r.summary.divergences = static_cast<int>(r.divergences.size());
  return r;
}

VerifyResult failing_verify() {
  VerifyResult v;
  v.manifest = "golden/h200.json";
  v.scenario = "gemm-batch-sweep";
  v.environment = {"driver 580.82 \u2192 580.95"};
  ManifestChange c;
  c.backend = "cpu-variant";
  c.expectation = "invariant";
  c.context = sample_context_id("3", "last");
  c.context_index = testing::sample_context_index("3", "last");
  c.request = 7;
  c.recorded = Hash128{0x1234, 0x5678};
  c.now = Hash128{0x1234, 0x5679};
  c.first_token = 1;
  c.tokens_recorded = c.tokens_now = 2;
  c.changed_tokens = 1;
  c.fails = true;
  v.changes.push_back(c);
  v.compared = 80;
  v.passed = false;
  v.verdict = "1 of 80 hashes changed (1 on backends that must not change)";
  return v;
}

int junit_failures(const std::string& xml) {
  std::smatch m;
  const std::regex re("<testsuites [^>]*failures=\"([0-9]+)\"");
  if (!std::regex_search(xml, m, re)) return -1;
  return std::stoi(m[1]);
}

// The verdict each output states, as "PASS" or "FAIL" (or "?" when it states none).
struct Verdicts {
  std::string console, json, markdown, html, junit;
};

Verdicts verdicts_of(const AuditResult& r) {
  Verdicts v;
  const std::string console = render_console_summary(r);
  v.console = console.find("\naudit PASSED") != std::string::npos   ? "PASS"
              : console.find("\naudit FAILED") != std::string::npos ? "FAIL"
                                                                    : "?";
  v.json = audit_to_json(r).at("summary").at("passed").get<bool>() ? "PASS" : "FAIL";
  const std::string md = render_markdown_report(r);
  v.markdown = md.rfind("# \u2713 PASS", 0) == 0   ? "PASS"
               : md.rfind("# \u2717 FAIL", 0) == 0 ? "FAIL"
                                                   : "?";
  const std::string html = render_html_report(r);
  v.html =
      html.find("<title>nvdet audit gemm-batch-sweep: PASS</title>") != std::string::npos   ? "PASS"
      : html.find("<title>nvdet audit gemm-batch-sweep: FAIL</title>") != std::string::npos ? "FAIL"
                                                                                            : "?";
  const int failures = junit_failures(render_junit_report(r));
  v.junit = failures == 0 ? "PASS" : failures > 0 ? "FAIL" : "?";
  return v;
}

void expect_all(const AuditResult& r, const std::string& verdict) {
  const Verdicts v = verdicts_of(r);
  EXPECT_EQ(v.console, verdict);
  EXPECT_EQ(v.json, verdict);
  EXPECT_EQ(v.markdown, verdict);
  EXPECT_EQ(v.html, verdict);
  EXPECT_EQ(v.junit, verdict);
  EXPECT_EQ(github_error_annotations(r).empty(), verdict == "PASS") << github_error_annotations(r);
}

TEST(OneVerdict, PassingAudit) { expect_all(passing_result(), "PASS"); }

TEST(OneVerdict, FailingExpectation) { expect_all(make_sample_audit_result(), "FAIL"); }

TEST(OneVerdict, PassingVerifyKeepsThePass) {
  AuditResult r = passing_result();
  VerifyResult v;
  v.manifest = "golden.json";
  v.compared = 80;
  v.verdict = "all 80 recorded hashes reproduced bit for bit";
  attach_verify(r, v);
  expect_all(r, "PASS");
  EXPECT_EQ(audit_to_json(r).at("summary").at("verify_passed"), true);
  EXPECT_EQ(audit_to_json(r).at("verify").at("compared"), 80);
}

TEST(OneVerdict, FailingVerifyFailsEveryFormat) {
  AuditResult r = passing_result();
  attach_verify(r, failing_verify());
  expect_all(r, "FAIL");

  const auto j = audit_to_json(r);
  EXPECT_EQ(j.at("summary").at("verify_passed"), false);
  EXPECT_EQ(j.at("summary").at("failed_backends"), 0);  // the expectations themselves held
  EXPECT_EQ(j.at("verify").at("changes").at(0).at("first_token"), 1);
  EXPECT_EQ(j.at("verify").at("changes").at(0).at("request"), 7);

  // JUnit: one case per backend and context group; only the group holding the change fails,
  // and its message names the request and the first changed token.
  const std::string xml = render_junit_report(r);
  EXPECT_EQ(junit_failures(xml), 1) << xml;
  EXPECT_NE(xml.find("<testsuite name=\"gemm-batch-sweep/verify\" tests=\"4\" failures=\"1\""),
            std::string::npos)
      << xml;
  const size_t failing = xml.find("<testcase name=\"verify/cpu-variant/position=last\"");
  ASSERT_NE(failing, std::string::npos) << xml;
  const std::string failing_case = xml.substr(failing, xml.find("</testcase>", failing) - failing);
  EXPECT_NE(failing_case.find("<failure type=\"manifest-mismatch\""), std::string::npos);
  EXPECT_NE(failing_case.find("request 7 at " + sample_context_id("3", "last")), std::string::npos);
  EXPECT_NE(failing_case.find("first changed token 1"), std::string::npos);
  EXPECT_NE(xml.find("<testcase name=\"verify/cpu-variant/position=first\" "
                     "classname=\"gemm-batch-sweep\" time=\"0.000000\"/>"),
            std::string::npos);

  // Markdown and HTML show the change and the environment; the console says why it failed.
  const std::string md = render_markdown_report(r);
  EXPECT_NE(md.find("**verify FAILED**"), std::string::npos);
  EXPECT_NE(md.find("| `cpu-variant` | invariant | batch=3, position=last | 0 | 7 | 1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- driver 580.82 \u2192 580.95"), std::string::npos);
  const std::string html = render_html_report(r);
  EXPECT_NE(html.find("<section id=\"verify\">"), std::string::npos);
  EXPECT_NE(html.find("verify FAILED"), std::string::npos);
  const std::string console = render_console_summary(r);
  EXPECT_NE(console.find("CHANGED cpu-variant"), std::string::npos) << console;
  EXPECT_NE(console.find("manifest verify FAILED"), std::string::npos) << console;

  // The annotation points at the manifest.
  EXPECT_NE(github_error_annotations(r).find("::error file=golden/h200.json,title="),
            std::string::npos);
}

TEST(OneVerdict, VerifyFailingWithoutAChangeStillFailsJunit) {
  AuditResult r = passing_result();
  VerifyResult v = failing_verify();
  v.changes.clear();
  v.missing.push_back({"cpu-variant", sample_context_id("1", "first"), 0, 0});
  v.verdict = "0 of 80 hashes changed, 1 recorded entries not run (--strict)";
  attach_verify(r, v);
  expect_all(r, "FAIL");
  EXPECT_NE(render_junit_report(r).find("<testcase name=\"verify/manifest\""), std::string::npos);
}

TEST(OneVerdict, SkippedBackendIsSaidSkippedEverywhere) {
  AuditResult r = passing_result();
  BackendOutcome b;
  b.name = "cuda-invariant";
  b.gpu = true;
  b.expect = Expectation::kInvariant;
  b.skipped = true;
  b.skip_reason = "needs a GPU; none is available";
  b.verdict = "skipped: " + b.skip_reason;
  r.backends.push_back(b);
  r.summary.backends = 3;
  r.summary.skipped_backends = 1;
  expect_all(r, "PASS");
  const std::string xml = render_junit_report(r);
  EXPECT_NE(xml.find("skipped=\"1\""), std::string::npos);
  EXPECT_NE(
      xml.find("<testcase name=\"cuda-invariant/skipped\" classname=\"gemm-batch-sweep\" "
               "time=\"0.000000\">\n      <skipped message=\"needs a GPU; none is available\"/>"),
      std::string::npos)
      << xml;
  EXPECT_NE(
      render_markdown_report(r).find(
          "| `cuda-invariant` | invariant | 0 | \u2013 | \u2013 | \u2013 | skipped: needs a GPU"),
      std::string::npos);
  EXPECT_NE(render_html_report(r).find("<tr class=\"skipped\"><td><code>cuda-invariant</code>"),
            std::string::npos);
  EXPECT_EQ(render_html_report(r).find("id=\"heatmap-cuda-invariant\""), std::string::npos);
  const auto j = audit_to_json(r);
  EXPECT_EQ(j.at("summary").at("skipped_backends"), 1);
  EXPECT_EQ(j.at("backends").at(2).at("skipped"), true);
  EXPECT_EQ(j.at("backends").at(2).at("skip_reason"), b.skip_reason);
  const std::string console = render_console_summary(r);
  EXPECT_NE(console.find("  SKIP cuda-invariant"), std::string::npos) << console;
  EXPECT_NE(console.find("audit PASSED: 2 of 2 backends met their expectation, 1 skipped"),
            std::string::npos)
      << console;
}

TEST(VerifyText, ShortHashesAlwaysShowTheDifference) {
  const Hash128 a{0x6ccd402f6586f649ull, 0x2ab1196fc78c42eeull};
  const Hash128 b{0x6ccd402f6586f649ull, 0x2ab1196fc78c42e0ull};
  EXPECT_EQ(short_hashes(a, b), std::make_pair(a.hex(), b.hex()));  // last digit differs
  const Hash128 c{0x6ccd402f6586f649ull, 0x0ull}, d{0x6ccd402f6587f649ull, 0x0ull};
  EXPECT_EQ(short_hashes(c, d),
            std::make_pair(std::string("6ccd402f6586"), std::string("6ccd402f6587")));
  const Hash128 e{0x6ccd402f65860000ull, 0x0ull}, f{0x6ccd402f65861000ull, 0x0ull};
  EXPECT_EQ(short_hashes(e, f),
            std::make_pair(std::string("6ccd402f65860"), std::string("6ccd402f65861")));
}

TEST(GithubAnnotations, NameTheScenarioLineAndEscape) {
  AuditResult r = make_sample_audit_result();
  r.backends[1].scenario_line = 12;
  const std::string a = github_error_annotations(r);
  EXPECT_NE(a.find("::error file=scenarios/gemm.yaml,line=12,title=nvdet audit gemm-batch-sweep%3A "
                   "cpu-invariant expected invariant::cpu-invariant: request 7"),
            std::string::npos)
      << a;
  EXPECT_NE(
      a.find("::error file=scenarios/gemm.yaml,title=nvdet audit gemm-batch-sweep%3A cpu-canary"),
      std::string::npos)
      << a;
  EXPECT_EQ(std::count(a.begin(), a.end(), '\n'), 2);  // one line per failed backend
  EXPECT_EQ(github_escape("a%b\r\nc:d,e", false), "a%25b%0D%0Ac:d,e");
  EXPECT_EQ(github_escape("a%b\r\nc:d,e", true), "a%25b%0D%0Ac%3Ad%2Ce");
}

}  // namespace
}  // namespace nvdet
