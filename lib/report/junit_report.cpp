#include "lib/report/junit_report.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "lib/report/parity_section.h"
#include "lib/report/probe_section.h"
#include "lib/report/report_text.h"
#include "lib/report/traffic_section.h"
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
  std::string message;              // one line: the failure attribute
  std::string details;              // the failure body
};

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

// One test case per backend and context (its repeats together), timed as measured: it fails
// where an `invariant` backend's output of that context differs from the baseline's (or between
// repeats). A `variant` backend's expectation is over the whole sweep: when it fails, an
// `/expectation` case below says so.
std::vector<TestCase> backend_cases(const AuditResult& r, const BackendOutcome& b) {
  if (b.skipped) {
    TestCase t;
    t.name = b.name + "/skipped";
    t.skipped = true;
    t.message = b.skip_reason;
    return {t};
  }
  std::vector<TestCase> cases;
  std::map<int, size_t> case_of;  // context index -> its test case
  for (const CaseRecord& c : r.cases) {
    if (c.backend != b.name) continue;
    const auto [it, fresh] = case_of.emplace(c.context_index, cases.size());
    if (fresh) {
      cases.emplace_back();
      cases.back().name = b.name + "/" + context_of(r, c).id;
    }
    cases[it->second].seconds += c.seconds;
  }
  for (const Divergence& d : r.divergences) {
    if (d.backend != b.name || b.expect != Expectation::kInvariant) continue;
    const auto it = case_of.find(d.context_index);
    if (it == case_of.end()) continue;
    TestCase& t = cases[it->second];
    const std::string sentence =
        d.served ? probe_difference_sentence(r, d) : mismatch_sentence(r, d);
    if (!t.failed) t.message = "expected invariant, but " + sentence;
    t.failed = true;
    t.details += sentence + "\n";
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
  // The backend failed for a reason no context's case shows (say, a manifest mismatch): say so in
  // a case of its own so the XML never passes where the audit failed.
  const bool shown =
      std::any_of(cases.begin(), cases.end(), [](const TestCase& t) { return t.failed; });
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
  std::map<int, std::string> group_of;                    // context index -> group
  std::vector<std::pair<std::string, std::string>> keys;  // (backend, group), in run order
  for (const CaseRecord& c : r.cases) {
    const std::string& group = context_of(r, c).group;
    group_of.emplace(c.context_index, group);
    const std::pair<std::string, std::string> key{c.backend, group};
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  for (const ManifestChange& c : v.changes) {
    const auto it = group_of.find(c.context_index);
    const std::pair<std::string, std::string> key{c.backend,
                                                  it == group_of.end() ? "" : it->second};
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
  const bool shown =
      std::any_of(cases.begin(), cases.end(), [](const TestCase& t) { return t.failed; });
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

// Model scenarios: the token-level result the console shows, as the backend suite's properties.
void add_token_level_properties(const AuditResult& r, const BackendOutcome& b,
                                std::vector<std::pair<std::string, std::string>>& properties) {
  const auto t = token_level_result(r, b);
  if (!t) return;
  if (!t->completions.empty()) properties.emplace_back("completions", t->completions);
  properties.emplace_back("first_token_flip", t->first_flip.empty()
                                                  ? "none: every token matched the baseline's"
                                                  : t->first_flip);
  if (!t->first_op.empty()) properties.emplace_back("first_op_parted", t->first_op);
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
      case '\t': out += "&#9;"; break;  // kept through attribute-value normalisation
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

void write_suite(std::ostringstream& body, const std::string& classname,
                 const std::string& run_attrs, const Suite& s, int& total_tests,
                 int& total_failures, int& total_skipped, double& total_seconds) {
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
       << seconds_attr(seconds) << "\"" << run_attrs << ">\n";
  if (!s.properties.empty()) {
    body << "    <properties>\n";
    for (const auto& [k, v] : s.properties) {
      body << "      <property name=\"" << xml_escape(k) << "\" value=\"" << xml_escape(v)
           << "\"/>\n";
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
  // When and where the audit ran, on every suite (JUnit's timestamp: ISO 8601, UTC, no zone).
  std::string run_attrs;
  if (!r.started_at.empty()) {
    run_attrs += " timestamp=\"" + xml_escape(r.started_at.substr(0, 19)) + "\"";
  }
  if (!r.hostname.empty()) run_attrs += " hostname=\"" + xml_escape(r.hostname) + "\"";
  // Suites are named scenario/backend: one JUnit file per scenario, and dashboards that gather
  // several never see two suites of one name.
  for (const BackendOutcome& b : r.backends) {
    Suite s{r.scenario.name + "/" + b.name, {}, backend_cases(r, b)};
    s.properties = {{"expect", std::string(expectation_name(b.expect))},
                    {"contexts_run", std::to_string(b.contexts_run)},
                    {"divergent_contexts", std::to_string(b.divergent_contexts)},
                    {"max_distinct_results", std::to_string(b.max_distinct_results)},
                    {"verdict", b.skipped ? "skipped: " + b.skip_reason : b.verdict}};
    add_token_level_properties(r, b, s.properties);
    add_traffic_properties(r, b, s.properties);
    for (auto& property : parity_junit_properties(r, b))
      s.properties.push_back(std::move(property));
    for (auto& p : probe_junit_properties(r, b)) s.properties.push_back(std::move(p));
    write_suite(body, classname, run_attrs, s, total_tests, total_failures, total_skipped,
                total_seconds);
  }
  if (r.verify) {
    Suite s{r.scenario.name + "/verify",
            {{"manifest", r.verify->manifest}, {"verdict", r.verify->verdict}},
            verify_cases(r)};
    for (const std::string& e : r.verify->environment) s.properties.emplace_back("environment", e);
    write_suite(body, classname, run_attrs, s, total_tests, total_failures, total_skipped,
                total_seconds);
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"nvdet " << command_name(r) << " " << xml_escape(r.scenario.name)
    << "\" tests=\"" << total_tests << "\" failures=\"" << total_failures
    << "\" errors=\"0\" skipped=\"" << total_skipped << "\" time=\"" << seconds_attr(total_seconds)
    << "\">\n";
  o << body.str();
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace nvdet
