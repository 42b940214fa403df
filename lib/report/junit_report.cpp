#include "lib/report/junit_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "lib/report/report_text.h"
#include "lib/scenario/scenario.h"

namespace nvdet {
namespace {

using namespace report_text;

struct TestCase {
  std::string name;
  double seconds = 0.0;
  bool failed = false;
  std::string message;  // one line: the failure attribute
  std::string details;  // the failure body
};

// The requests of the audit: the scenario's probed ones, or those seen in the cases.
std::vector<int64_t> audited_requests(const AuditResult& r) {
  std::vector<int64_t> out = r.scenario.requests;
  if (out.empty()) {
    std::set<int64_t> seen;
    for (const CaseRecord& c : r.cases) {
      for (const RequestRecord& q : c.requests) seen.insert(q.request);
    }
    out.assign(seen.begin(), seen.end());
  }
  return out;
}

std::string mismatch_sentence(const AuditResult& r, const Divergence& d) {
  const FirstMismatch& m = d.first_mismatch;
  std::string s = "request " + std::to_string(d.request) + " differs";
  s += d.kind == "run-to-run"
           ? " between repeats 0 and " + std::to_string(d.repeat) + " of " +
                 context_label(r, d.context)
           : " at " + context_label(r, d.context) + " from " + context_label(r, d.baseline_context);
  s += ": first at token " + std::to_string(d.token) + " (" +
       named_coords(m.coords, r.scenario.coord_names) + "): " + exact_number(m.a) + " vs " +
       exact_number(m.b) + " (" + m.a_bits + " vs " + m.b_bits + ", " + ulp_text(m.ulp) +
       " ulp); max |diff| " + short_number(d.max_abs_diff) + ", " +
       plural(d.mismatch_count, "element", "elements") + " differ";
  const auto notes = notes_that_differ(d.baseline_notes, d.notes);
  if (!notes.empty()) s += " (" + join(notes, "; ") + ")";
  return s;
}

std::vector<TestCase> backend_cases(const AuditResult& r, const BackendOutcome& b) {
  const std::vector<int64_t> requests = audited_requests(r);
  double backend_seconds = 0.0;
  for (const CaseRecord& c : r.cases) {
    if (c.backend == b.name) backend_seconds += c.seconds;
  }
  // Cases run all requests together; share the time equally so the suite's total is right.
  const double per_request = requests.empty() ? 0.0 : backend_seconds / requests.size();
  bool any_divergence = false;
  for (const Divergence& d : r.divergences) any_divergence |= d.backend == b.name;

  std::vector<TestCase> cases;
  for (const int64_t q : requests) {
    TestCase t;
    t.name = b.name + "/request-" + std::to_string(q);
    t.seconds = per_request;
    std::vector<const Divergence*> divs;
    for (const Divergence& d : r.divergences) {
      if (d.backend == b.name && d.request == q) divs.push_back(&d);
    }
    if (b.expect == Expectation::kInvariant && !divs.empty()) {
      t.failed = true;
      t.message = "expected invariant, but " + mismatch_sentence(r, *divs.front());
      for (const Divergence* d : divs) t.details += mismatch_sentence(r, *d) + "\n";
    } else if (b.expect == Expectation::kVariant && !any_divergence) {
      t.failed = true;
      t.message = "expected variation (a canary), but all " + std::to_string(b.contexts_run) +
                  " contexts gave the same bits for every request";
      t.details = b.verdict;
    }
    cases.push_back(std::move(t));
  }
  // The backend failed for a reason no request case shows (say, a manifest mismatch): say so in
  // a case of its own so the XML never passes where the audit failed.
  const bool shown = std::any_of(cases.begin(), cases.end(), [](const TestCase& t) { return t.failed; });
  if (!b.passed && !shown) {
    TestCase t;
    t.name = b.name + "/expectation";
    t.failed = true;
    t.message = b.verdict.empty() ? "the backend's expectation failed" : b.verdict;
    cases.push_back(std::move(t));
  }
  return cases;
}

std::string seconds_attr(double s) { return fmt::format("{:.6f}", s >= 0 && s < 1e12 ? s : 0.0); }

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;   // kept through attribute-value normalisation
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (c < 0x20 || c == 0x7f) break;  // not allowed in XML 1.0 (0x7f: discouraged)
        out += ch;
    }
  }
  return out;
}

std::string render_junit_report(const AuditResult& r) {
  std::ostringstream body;
  int total_tests = 0, total_failures = 0;
  double total_seconds = 0.0;
  const std::string classname = xml_escape(r.scenario.name);
  for (const BackendOutcome& b : r.backends) {
    const std::vector<TestCase> cases = backend_cases(r, b);
    int failures = 0;
    double seconds = 0.0;
    for (const TestCase& t : cases) {
      failures += t.failed;
      seconds += t.seconds;
    }
    total_tests += static_cast<int>(cases.size());
    total_failures += failures;
    total_seconds += seconds;
    body << "  <testsuite name=\"" << xml_escape(b.name) << "\" tests=\"" << cases.size()
         << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\" time=\""
         << seconds_attr(seconds) << "\">\n";
    body << "    <properties>\n";
    body << "      <property name=\"expect\" value=\"" << expectation_name(b.expect) << "\"/>\n";
    body << "      <property name=\"contexts_run\" value=\"" << b.contexts_run << "\"/>\n";
    body << "      <property name=\"divergent_contexts\" value=\"" << b.divergent_contexts
         << "\"/>\n";
    body << "      <property name=\"max_distinct_results\" value=\"" << b.max_distinct_results
         << "\"/>\n";
    body << "      <property name=\"verdict\" value=\"" << xml_escape(b.verdict) << "\"/>\n";
    body << "    </properties>\n";
    for (const TestCase& t : cases) {
      body << "    <testcase name=\"" << xml_escape(t.name) << "\" classname=\"" << classname
           << "\" time=\"" << seconds_attr(t.seconds) << "\"";
      if (!t.failed) {
        body << "/>\n";
        continue;
      }
      body << ">\n      <failure type=\"" << (b.expect == Expectation::kVariant ? "no-variation" : "divergence")
           << "\" message=\"" << xml_escape(t.message) << "\">" << xml_escape(t.details)
           << "</failure>\n    </testcase>\n";
    }
    body << "  </testsuite>\n";
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"nvdet audit " << xml_escape(r.scenario.name) << "\" tests=\""
    << total_tests << "\" failures=\"" << total_failures << "\" errors=\"0\" time=\""
    << seconds_attr(total_seconds) << "\">\n";
  o << body.str();
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace nvdet
