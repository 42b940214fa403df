#include "lib/report/junit_report.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "lib/report/parity_section.h"
#include "lib/report/report_text.h"
#include "lib/scenario/scenario.h"

namespace nvdet {
namespace {

using namespace report_text;

struct TestCase {
  std::string name;
  double seconds = 0.0;
  bool failed = false;
  bool skipped = false;
  std::string type = "divergence";  // the failure's type attribute
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
  const std::string context = context_label(r, d.context_index, d.context);
  s += d.kind == DivergenceKind::kRunToRun
           ? " between repeats 0 and " + std::to_string(d.repeat) + " of " + context
           : " at " + context + " from " +
                 context_label(r, d.baseline_context_index, d.baseline_context);
  s += ": first at token " + std::to_string(d.token) + " (" +
       named_coords(m.coords, r.scenario.coord_names) + "): " + exact_number(m.a) + " vs " +
       exact_number(m.b) + " (" + m.a_bits + " vs " + m.b_bits + ", " + ulp_text(m.ulp) +
       " ulp); max |diff| " + short_number(d.max_abs_diff) + ", " +
       plural(d.mismatch_count, "element", "elements") + " differ";
  const auto notes = notes_that_differ(d.baseline_notes, d.notes);
  if (!notes.empty()) s += " (" + absl::StrJoin(notes, "; ") + ")";
  return s;
}

std::vector<TestCase> backend_cases(const AuditResult& r, const BackendOutcome& b) {
  if (b.skipped) {
    TestCase t;
    t.name = b.name + "/skipped";
    t.skipped = true;
    t.message = b.skip_reason;
    return {t};
  }
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
      t.type = "no-variation";
      t.message = "expected variation (a canary), but all " + std::to_string(b.contexts_run) +
                  " contexts gave the same bits for every request";
      t.details = b.verdict;
    }
    cases.push_back(std::move(t));
  }
  if (const std::optional<ParityTestCase> p = parity_junit_case(b)) {
    TestCase t;
    t.name = p->name;
    t.failed = p->failed;
    t.type = "sampler-trainer";
    t.message = p->message;
    t.details = p->details;
    cases.push_back(std::move(t));
  }
  // The backend failed for a reason no request case shows (say, a manifest mismatch): say so in
  // a case of its own so the XML never passes where the audit failed.
  const bool shown = std::any_of(cases.begin(), cases.end(), [](const TestCase& t) { return t.failed; });
  if (!b.passed && !shown) {
    TestCase t;
    t.name = b.name + "/expectation";
    t.failed = true;
    t.type = b.expect == Expectation::kVariant ? "no-variation" : "divergence";
    t.message = b.verdict.empty() ? "the backend's expectation failed" : b.verdict;
    cases.push_back(std::move(t));
  }
  return cases;
}

std::string change_sentence(const ManifestChange& c) {
  std::string s = "request " + std::to_string(c.request) + " at " + c.context + " (repeat " +
                  std::to_string(c.repeat) + "): recorded " + c.recorded.hex() + ", now " +
                  c.now.hex();
  if (c.first_token >= 0) {
    s += "; first changed token " + std::to_string(c.first_token) + " (" +
         std::to_string(c.changed_tokens) + " of " +
         std::to_string(std::min(c.tokens_recorded, c.tokens_now)) + " tokens differ)";
  }
  if (c.elementwise && c.elementwise->first) {
    const FirstMismatch& m = *c.elementwise->first;
    s += "; first mismatch (" + named_coords(m.coords, {}) + "): " + exact_number(m.a) + " vs " +
         exact_number(m.b) + " (" + m.a_bits + " vs " + m.b_bits + ", " + ulp_text(m.ulp) + " ulp)";
  }
  return s;
}

// With --verify: one test case per backend and context group (the contexts that share the
// request-defining axis values), failing where a hash that must not change moved; and one for
// the manifest as a whole when it failed for another reason (missing or new entries, --strict).
std::vector<TestCase> verify_cases(const AuditResult& r) {
  const VerifyResult& v = *r.verify;
  std::map<int, std::string> group_of;  // context index -> group
  std::vector<std::pair<std::string, std::string>> keys;  // (backend, group), in run order
  for (const CaseRecord& c : r.cases) {
    group_of.emplace(c.context_index, c.group);
    const std::pair<std::string, std::string> key{c.backend, c.group};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  for (const ManifestChange& c : v.changes) {
    const auto it = group_of.find(c.context_index);
    const std::pair<std::string, std::string> key{c.backend, it == group_of.end() ? "" : it->second};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  std::vector<TestCase> cases;
  for (const auto& [backend, group] : keys) {
    TestCase t;
    t.name = "verify/" + backend + (group.empty() ? "" : "/" + group);
    t.type = "manifest-mismatch";
    int changed = 0;
    for (const ManifestChange& c : v.changes) {
      const auto it = group_of.find(c.context_index);
      if (c.backend != backend || (it == group_of.end() ? "" : it->second) != group) continue;
      ++changed;
      if (!c.fails) continue;
      if (!t.failed) t.message = "hash changed against " + v.manifest + ": " + change_sentence(c);
      t.failed = true;
      t.details += change_sentence(c) + "\n";
    }
    if (t.failed) {
      t.message += " (" + plural(changed, "change", "changes") + " in this group)";
    }
    cases.push_back(std::move(t));
  }
  const bool shown = std::any_of(cases.begin(), cases.end(), [](const TestCase& t) { return t.failed; });
  if (!v.passed && !shown) {
    TestCase t;
    t.name = "verify/manifest";
    t.type = "manifest-mismatch";
    t.failed = true;
    t.message = "verify against " + v.manifest + " failed: " + v.verdict;
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

namespace {

struct Suite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<TestCase> cases;
};

void write_suite(std::ostringstream& body, const std::string& classname, const Suite& s,
                 int& total_tests, int& total_failures, int& total_skipped, double& total_seconds) {
  int failures = 0, skipped = 0;
  double seconds = 0.0;
  for (const TestCase& t : s.cases) {
    failures += t.failed;
    skipped += t.skipped;
    seconds += t.seconds;
  }
  total_tests += static_cast<int>(s.cases.size());
  total_failures += failures;
  total_skipped += skipped;
  total_seconds += seconds;
  body << "  <testsuite name=\"" << xml_escape(s.name) << "\" tests=\"" << s.cases.size()
       << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\""
       << seconds_attr(seconds) << "\">\n";
  if (!s.properties.empty()) {
    body << "    <properties>\n";
    for (const auto& [k, v] : s.properties) {
      body << "      <property name=\"" << xml_escape(k) << "\" value=\"" << xml_escape(v) << "\"/>\n";
    }
    body << "    </properties>\n";
  }
  for (const TestCase& t : s.cases) {
    body << "    <testcase name=\"" << xml_escape(t.name) << "\" classname=\"" << classname
         << "\" time=\"" << seconds_attr(t.seconds) << "\"";
    if (t.skipped) {
      body << ">\n      <skipped message=\"" << xml_escape(t.message) << "\"/>\n    </testcase>\n";
    } else if (t.failed) {
      body << ">\n      <failure type=\"" << xml_escape(t.type) << "\" message=\""
           << xml_escape(t.message) << "\">" << xml_escape(t.details)
           << "</failure>\n    </testcase>\n";
    } else {
      body << "/>\n";
    }
  }
  body << "  </testsuite>\n";
}

}  // namespace

std::string render_junit_report(const AuditResult& r) {
  std::ostringstream body;
  int total_tests = 0, total_failures = 0, total_skipped = 0;
  double total_seconds = 0.0;
  const std::string classname = xml_escape(r.scenario.name);
  for (const BackendOutcome& b : r.backends) {
    Suite s{b.name, {}, backend_cases(r, b)};
    s.properties = {{"expect", std::string(expectation_name(b.expect))},
                    {"contexts_run", std::to_string(b.contexts_run)},
                    {"divergent_contexts", std::to_string(b.divergent_contexts)},
                    {"max_distinct_results", std::to_string(b.max_distinct_results)},
                    {"verdict", b.skipped ? "skipped: " + b.skip_reason : b.verdict}};
    write_suite(body, classname, s, total_tests, total_failures, total_skipped, total_seconds);
  }
  if (r.verify) {
    Suite s{"verify", {{"manifest", r.verify->manifest}, {"verdict", r.verify->verdict}},
            verify_cases(r)};
    for (const std::string& e : r.verify->environment) s.properties.emplace_back("environment", e);
    write_suite(body, classname, s, total_tests, total_failures, total_skipped, total_seconds);
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"nvdet audit " << xml_escape(r.scenario.name) << "\" tests=\""
    << total_tests << "\" failures=\"" << total_failures << "\" errors=\"0\" skipped=\""
    << total_skipped << "\" time=\"" << seconds_attr(total_seconds) << "\">\n";
  o << body.str();
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace nvdet
