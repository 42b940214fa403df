#include "lib/report/html_report.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
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

constexpr size_t kMaxDivergenceRows = 500;

std::string esc(std::string_view text) { return html_escape(text); }

// An id fragment made of safe characters (backend names are already tame; this keeps it so).
std::string id_fragment(const std::string& s) {
  std::string out;
  for (const char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out;
}

constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1 .pass{color:#1b7f3b}h1 .fail{color:#b3261e}h1 .skip{color:#6b6b6b}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}
td.wrap{overflow-wrap:anywhere;min-width:9em}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}h1 code,h3 code{font-size:inherit}
.ok{color:#1b7f3b;font-weight:bold}.bad{color:#b3261e;font-weight:bold}
.muted{color:#666;font-size:13px}td.num,td code{white-space:nowrap}td code+code{margin-left:6px}.heatmap{overflow-x:auto;margin-bottom:12px}
.legend span{display:inline-block;margin-right:14px;font-size:13px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #999}
section{margin-bottom:28px}.wide{overflow-x:auto;max-width:100%}
)";

// Filters the divergences table by backend. No network, no libraries.
constexpr const char* kScript = R"(
(function(){
  var select=document.getElementById('divergence-filter');
  if(!select)return;
  select.addEventListener('change',function(){
    var rows=document.querySelectorAll('#divergence-table tbody tr');
    for(var i=0;i<rows.length;i++){
      var show=select.value===''||rows[i].getAttribute('data-backend')===select.value;
      rows[i].style.display=show?'':'none';
    }
  });
})();
)";

void write_summary(std::ostringstream& o, const AuditResult& r) {
  const ScenarioSummary& s = r.scenario;
  const AuditSummary& sum = r.summary;
  o << "<section id=\"summary\">\n<h1>nvdet " << command_name(r) << " <code>" << esc(s.name)
    << "</code>: "
    << (ran_nothing(r) ? "<span class=\"skip\">NOTHING RAN</span>"
        : sum.passed   ? "<span class=\"pass\">PASS</span>"
                       : "<span class=\"fail\">FAIL</span>")
    << "</h1>\n";
  if (!s.description.empty()) o << "<p>" << esc(s.description) << "</p>\n";
  std::vector<std::string> requests;
  for (const int64_t q : s.requests) requests.push_back(std::to_string(q));
  o << "<table>\n";
  o << "<tr><th>Scenario</th><td><code>" << esc(s.name) << "</code> " << esc(s.path)
    << "</td></tr>\n";
  o << "<tr><th>Op</th><td>" << esc(s.op) << ", " << esc(s.dtype);
  if (!s.out_dtype.empty() && s.out_dtype != s.dtype) o << " &rarr; " << esc(s.out_dtype);
  o << ", seed " << s.seed << ", repeat " << s.repeat << "</td></tr>\n";
  o << "<tr><th>Requests</th><td>" << esc(absl::StrJoin(requests, ", ")) << "</td></tr>\n";
  for (const auto& [name, values] : s.axes) {
    o << "<tr><th>Axis <code>" << esc(name) << "</code></th><td>"
      << esc(absl::StrJoin(values, ", ")) << "</td></tr>\n";
  }
  o << "<tr><th>Device</th><td>" << esc(device_line(r.system)) << "</td></tr>\n";
  o << "<tr><th>Software</th><td>nvdet " << esc(r.system.nvdet_version);
  if (r.system.cuda_built) {
    o << ", CUDA architectures " << esc(r.system.compiled_architectures) << ", nvcc flags <code>"
      << esc(r.system.cuda_fp_flags) << "</code>";
  } else {
    o << ", built without CUDA";
  }
  o << ", host flags <code>" << esc(r.system.cxx_fp_flags) << "</code></td></tr>\n";
  o << "<tr><th>Totals</th><td>" << esc(plural(sum.backends, "backend", "backends")) << ", "
    << esc(plural(sum.contexts, "context", "contexts")) << ", "
    << esc(plural(sum.cases, "case", "cases")) << ", "
    << esc(plural(sum.divergences, "divergence", "divergences")) << ", "
    << esc(plural(sum.failed_backends, "failed backend", "failed backends")) << ", "
    << (sum.skipped_backends
            ? esc(plural(sum.skipped_backends, "skipped backend", "skipped backends")) + ", "
            : std::string())
    << esc(short_number(sum.seconds)) << " s</td></tr>\n";
  if (r.verify) {
    o << "<tr><th>Manifest</th><td><code>" << esc(r.verify->manifest) << "</code>: "
      << (r.verify->passed ? "<span class=\"ok\">verified</span>"
                           : "<span class=\"bad\">verify FAILED</span>")
      << " (" << esc(r.verify->verdict) << ")</td></tr>\n";
  }
  o << "</table>\n</section>\n";
}

void write_backends(std::ostringstream& o, const AuditResult& r) {
  o << "<section id=\"backends\">\n<h2>Backends</h2>\n<table>\n<thead><tr><th>Backend</th>"
       "<th>Expectation</th><th>Contexts</th><th>Divergent contexts</th><th>Run-to-run</th>"
       "<th>Distinct results</th><th>Verdict</th><th>Stands for</th></tr></thead>\n<tbody>\n";
  for (const BackendOutcome& b : r.backends) {
    const std::vector<std::string> stands = stands_for_lines(b, r.scenario.op);
    if (b.skipped) {
      o << "<tr class=\"skipped\"><td><code>" << esc(b.name) << "</code>" << (b.gpu ? " (GPU)" : "")
        << "</td><td>" << expectation_name(b.expect)
        << "</td><td class=\"num\">0</td><td>&ndash;</td><td>&ndash;</td><td>&ndash;</td>"
           "<td><span class=\"muted\">skipped:</span> "
        << esc(b.skip_reason) << "</td><td>" << esc(absl::StrJoin(stands, "; ")) << "</td></tr>\n";
      continue;
    }
    o << "<tr><td><code>" << esc(b.name) << "</code>" << (b.gpu ? " (GPU)" : "")
      << "<br><span class=\"muted\">" << esc(b.description) << "</span></td><td>"
      << expectation_name(b.expect) << "</td><td class=\"num\">" << b.contexts_run
      << "</td><td class=\"num\">" << b.divergent_contexts << "</td><td class=\"num\">"
      << b.run_to_run_divergences << "</td><td class=\"num\">" << b.max_distinct_results
      << "</td><td class=\"wrap\">"
      << (b.passed ? "<span class=\"ok\">&#10003;</span> " : "<span class=\"bad\">&#10007;</span> ")
      << esc(b.verdict) << "</td><td>" << esc(absl::StrJoin(stands, "; ")) << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n</section>\n";
}

// Model scenarios: each case's wall time and tokens/s (as the Markdown report gives them).
void write_throughput(std::ostringstream& o, const AuditResult& r) {
  const std::vector<const CaseRecord*> cases = decoding_cases(r);
  if (cases.empty()) return;
  o << "<section id=\"throughput\">\n<h2>Decode throughput</h2>\n<table>\n<thead><tr>"
       "<th>Backend</th><th>Context</th><th>Seconds</th><th>Tokens</th><th>Tokens/s</th></tr>"
       "</thead>\n<tbody>\n";
  for (const CaseRecord* case_record : cases) {
    const CaseRecord& c = *case_record;
    o << "<tr><td><code>" << esc(c.backend) << "</code></td><td>"
      << esc(context_label(r, c.context_index, context_of(r, c).id))
      << (c.repeat > 0 ? " (repeat " + std::to_string(c.repeat) + ")" : "")
      << "</td><td class=\"num\">" << esc(short_number(c.seconds)) << "</td><td class=\"num\">"
      << c.generated_tokens << "</td><td class=\"num\">" << esc(short_number(tokens_per_second(c)))
      << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n</section>\n";
}

// Model scenarios: the token-level result the console shows, per backend (as the Markdown report
// gives it).
void write_token_level(std::ostringstream& o, const AuditResult& r) {
  std::ostringstream rows;
  for (const BackendOutcome& b : r.backends) {
    const auto t = token_level_result(r, b);
    if (!t) continue;
    rows << "<tr><td><code>" << esc(b.name) << "</code></td><td>"
         << esc(t->completions.empty() ? "-" : t->completions) << "</td><td>"
         << esc(t->first_flip.empty() ? "none: every token matched the baseline's" : t->first_flip)
         << "</td><td>" << esc(t->first_op.empty() ? "-" : t->first_op) << "</td></tr>\n";
  }
  if (rows.str().empty()) return;
  o << "<section id=\"token-level\">\n<h2>Token-level result</h2>\n<table>\n<thead><tr>"
       "<th>Backend</th><th>Completions</th><th>First token flip</th><th>First op whose bits "
       "parted</th></tr></thead>\n<tbody>\n"
    << rows.str() << "</tbody>\n</table>\n</section>\n";
}

// Serving traffic: the Markdown report's tables (traffic_section.h).
void write_traffic(std::ostringstream& o, const AuditResult& r) {
  const std::optional<TrafficReport> t = traffic_report(r);
  if (!t) return;
  o << "<section id=\"traffic\">\n<h2>Serving traffic</h2>\n<p>" << esc(t->summary) << ".</p>\n";
  for (const TrafficTable* table : {&t->replays, &t->partings}) {
    if (table->rows.empty()) continue;
    o << "<table>\n<thead><tr>";
    for (const std::string& h : table->heads) o << "<th>" << esc(h) << "</th>";
    o << "</tr></thead>\n<tbody>\n";
    for (const std::vector<std::string>& row : table->rows) {
      o << "<tr>";
      for (const std::string& v : row) o << "<td>" << esc(v) << "</td>";
      o << "</tr>\n";
    }
    o << "</tbody>\n</table>\n";
  }
  o << "</section>\n";
}

// Cell colours. A cell says whether the request's bits equal those of the baseline of its own
// group (the contexts that share the request-defining axis values: kv_len, prompt_len, ...), and
// how many distinct results that group has. Contexts of different groups compute different
// requests, so their hashes are never compared with each other.
constexpr const char* kSameColour = "#4e79a7";
// Few classes (every group has at most kFewClasses results): each result of a group after its
// baseline's gets its own colour, never reused.
constexpr size_t kFewClasses = 4;
constexpr const char* kClassColours[kFewClasses - 1] = {"#f28e2b", "#e15759", "#b07aa1"};
// More: a differing cell is shaded by its group's distinct-result count (2, 3, 4, 5, 6+), and
// the results are listed per group.
constexpr const char* kCountShades[] = {"#fdd0a2", "#fdae6b", "#f16913", "#d94801", "#7f2704"};
constexpr size_t kCountShadeCount = sizeof(kCountShades) / sizeof(kCountShades[0]);
constexpr const char* kNotRunColour = "#eeeeee";

std::string count_shade(size_t distinct) {
  return kCountShades[std::min(distinct, kCountShadeCount + 1) - 2];
}

// The classes of one request's hash within one group of contexts, in sweep order.
struct HeatmapGroup {
  std::string name, baseline_context;
  int baseline_index = 0;
  std::vector<Hash128> classes;
  std::vector<int> class_count;
};

// A map wider than this is not drawn (the group table still lists every result): 16384 cells is
// a 128 x 128 sweep, far past what a window shows at 5 pixels a cell.
constexpr size_t kMaxHeatmapCells = 16384;

// Every result of every group, with its hash and count: folded, since a wide sweep has many.
void write_group_table(std::ostringstream& o, const AuditResult& r,
                       const std::vector<HeatmapGroup>& groups) {
  o << "<details><summary>Results per group (" << groups.size()
    << ")</summary>\n<table>\n"
       "<thead><tr><th>Group</th><th>Baseline</th><th>Distinct</th><th>Results (contexts)</th></tr>"
       "</thead>\n<tbody>\n";
  for (const HeatmapGroup& g : groups) {
    std::vector<std::string> results;
    for (size_t c = 0; c < g.classes.size(); ++c) {
      results.push_back("<code>" +
                        esc((c == 0 ? std::string("baseline") : "#" + std::to_string(c + 1)) + " " +
                            g.classes[c].hex().substr(0, 12) + " (" +
                            std::to_string(g.class_count[c]) + ")") +
                        "</code>");
    }
    o << "<tr><td>" << esc(g.name.empty() ? std::string("all contexts") : g.name) << "</td><td>"
      << esc(context_label(r, g.baseline_index, g.baseline_context)) << "</td><td class=\"num\">"
      << g.classes.size() << "</td><td>" << absl::StrJoin(results, " ") << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n</details>\n";
}

// One backend's heatmap: the hash of one request in every context (repeat 0), in its result class
// within its group (RequestRecord::result_class: class 0 is the group's baseline result), laid out
// over the first two varying axes.
void write_heatmap(std::ostringstream& o, const AuditResult& r, const BackendOutcome& b) {
  std::vector<const CaseRecord*> cases;
  for (const CaseRecord& c : r.cases) {
    if (c.backend == b.name && c.repeat == 0) cases.push_back(&c);
  }
  std::stable_sort(cases.begin(), cases.end(), [](const CaseRecord* x, const CaseRecord* y) {
    return x->context_index < y->context_index;
  });
  const std::string hid = "heatmap-" + id_fragment(b.name);
  o << "<div class=\"heatmap\" id=\"" << hid << "\">\n<h3><code>" << esc(b.name)
    << "</code></h3>\n";
  if (cases.empty()) {
    o << "<p class=\"muted\">No cases were recorded for this backend.</p>\n</div>\n";
    return;
  }
  // The request shown: the first probed request that diverged between contexts, else the first
  // probed request.
  std::vector<int64_t> requests = r.scenario.requests;
  if (requests.empty()) {
    for (const RequestRecord& q : cases.front()->requests) requests.push_back(q.request);
  }
  if (requests.empty()) {
    o << "<p class=\"muted\">No requests were recorded.</p>\n</div>\n";
    return;
  }
  // Every structure below is bounded by what the report holds (its cases, requests and
  // divergences), looked up through maps: a report read from a file may claim any sweep.
  std::set<int64_t> diverged;
  for (const Divergence& d : r.divergences)
    if (d.backend == b.name && d.kind != DivergenceKind::kRunToRun) diverged.insert(d.request);
  int64_t request = requests.front();
  for (const int64_t q : requests) {
    if (diverged.count(q)) {
      request = q;
      break;
    }
  }

  // Classes of the request's hash within each group, in sweep order.
  using Group = HeatmapGroup;
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of;
  struct Point {
    const CaseRecord* c;
    size_t group;
    int cls;
  };
  std::vector<Point> points;
  for (const CaseRecord* c : cases) {
    for (const RequestRecord& q : c->requests) {
      if (q.request != request) continue;
      const Context& context = context_of(r, *c);
      const auto [gi, new_group] = group_of.try_emplace(context.group, groups.size());
      if (new_group) groups.push_back({context.group, context.id, c->context_index, {}, {}});
      Group& g = groups[gi->second];
      // The result model's numbering (assign_result_classes): repeat 0's results come first, in
      // sweep order, so the classes seen here are 0, 1, ... without gaps.
      const int cls = q.result_class;
      if (static_cast<size_t>(cls) >= g.classes.size()) {
        g.classes.resize(static_cast<size_t>(cls) + 1);
        g.class_count.resize(static_cast<size_t>(cls) + 1, 0);
      }
      g.classes[static_cast<size_t>(cls)] = q.hash;
      ++g.class_count[static_cast<size_t>(cls)];
      points.push_back({c, gi->second, cls});
    }
  }
  size_t most = 1, differing_groups = 0;
  for (const Group& g : groups) {
    most = std::max(most, g.classes.size());
    differing_groups += g.classes.size() > 1;
  }
  const bool few = most <= kFewClasses;
  auto fill_of = [&](const Point& p) -> std::string {
    if (p.cls == 0) return kSameColour;
    return few ? kClassColours[p.cls - 1] : count_shade(groups[p.group].classes.size());
  };
  auto class_text = [&](const Point& p) {
    const Group& g = groups[p.group];
    std::string t =
        p.cls == 0 ? "same as its group's baseline" : "result #" + std::to_string(p.cls + 1);
    t += " of " + std::to_string(g.classes.size()) + " in ";
    t += g.name.empty() ? std::string("the sweep") : "group " + g.name;
    return t;
  };

  o << "<p>Request " << request << " over "
    << esc(plural(static_cast<int64_t>(points.size()), "context", "contexts"));
  if (groups.size() > 1) {
    o << " in " << groups.size() << " groups (contexts with the same request-defining values; "
      << "each is compared with its own first context): ";
    if (differing_groups == 0) {
      o << "every group gave one result.";
    } else {
      o << esc(plural(static_cast<int64_t>(differing_groups), "group", "groups"))
        << " with more than one result, up to " << most << " distinct results in one group.";
    }
  } else {
    o << ": " << esc(plural(static_cast<int64_t>(most), "distinct result", "distinct results"))
      << ".";
  }
  o << "</p>\n";

  // Layout: x = first varying axis, y = second (a strip when there is one; one cell when none).
  const auto axes = varying_axes(r);
  std::string x_name, y_name;
  std::vector<std::string> x_values{""}, y_values{""};
  if (!axes.empty()) {
    x_name = axes[0].first;
    x_values = axes[0].second;
  }
  if (axes.size() > 1) {
    y_name = axes[1].first;
    y_values = axes[1].second;
  }
  // A sweep whose full grid is too large to draw (a filtered run of a wide sweep, or a report
  // file claiming huge axes) keeps only the axis values some case holds as columns and rows, in
  // the sweep's order: the map is bounded by the cases, not by the product of the axes listed.
  const auto used_values = [&](const std::string& axis, const std::vector<std::string>& all) {
    if (axis.empty()) return all;
    std::set<std::string> present;
    for (const Point& p : points)
      if (const auto v = context_value(context_of(r, *p.c).values, axis)) present.insert(*v);
    std::vector<std::string> out;
    for (const std::string& v : all)
      if (present.erase(v)) out.push_back(v);
    return out.empty() ? std::vector<std::string>{""} : out;
  };
  if (x_values.size() * y_values.size() > kMaxHeatmapCells) {
    x_values = used_values(x_name, x_values);
    y_values = used_values(y_name, y_values);
  }
  const auto index_of = [](const std::vector<std::string>& values) {
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < values.size(); ++i) at.emplace(values[i], i);
    return at;
  };
  const std::map<std::string, size_t> x_at = index_of(x_values), y_at = index_of(y_values);
  // Each cell collects the contexts that fall in it; with more than two varying axes several
  // contexts share a cell, and a cell whose contexts disagree is drawn as mixed.
  std::map<std::pair<size_t, size_t>, std::vector<const Point*>> cells;
  for (const Point& p : points) {
    size_t xi = 0, yi = 0;
    if (!x_name.empty()) {
      const auto v = context_value(context_of(r, *p.c).values, x_name);
      const auto it = v ? x_at.find(*v) : x_at.end();
      if (it == x_at.end()) continue;
      xi = it->second;
    }
    if (!y_name.empty()) {
      const auto v = context_value(context_of(r, *p.c).values, y_name);
      const auto it = v ? y_at.find(*v) : y_at.end();
      if (it == y_at.end()) continue;
      yi = it->second;
    }
    cells[{xi, yi}].push_back(&p);
  }

  const size_t nx = x_values.size(), ny = y_values.size();
  if (nx * ny > kMaxHeatmapCells) {
    o << "<p class=\"muted\">The map would have " << nx << " x " << ny << " cells, more than the "
      << kMaxHeatmapCells << " drawn; the table below lists every group's results.</p>\n";
    write_group_table(o, r, groups);
    o << "</div>\n";
    return;
  }
  size_t longest_y = 0;
  for (const std::string& v : y_values) longest_y = std::max(longest_y, v.size());
  size_t longest_x = 0;
  for (const std::string& v : x_values) longest_x = std::max(longest_x, v.size());
  const int left =
      12 + static_cast<int>(std::min<size_t>(longest_y, 24) * 7) + (y_name.empty() ? 0 : 16);
  // Cells shrink so that the map fits a 1280-pixel window (page margins and scroll bar taken
  // off); below 5 pixels a cell could not be pointed at, and the map scrolls instead.
  const int fit = (1180 - left - 10) / static_cast<int>(std::max<size_t>(nx, 1));
  const int cell = std::clamp(fit, 5, 22);
  const int top = 8;
  const int bottom = 20 + static_cast<int>(std::min<size_t>(longest_x, 16) * 7);
  const int width = left + static_cast<int>(nx) * cell + 10;
  const int height = top + static_cast<int>(ny) * cell + bottom;
  // Rotated x labels need about 12 px each; skip labels rather than overlap them.
  const size_t x_label_step = static_cast<size_t>((12 + cell - 1) / cell);

  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" role=\"img\" aria-label=\"results of request " << request << " over the sweep\">\n";
  o << "<defs><pattern id=\"mixed-" << id_fragment(b.name)
    << "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" "
       "fill=\"#ffffff\"/><path d=\"M0,6 L6,0\" stroke=\"#333\" "
       "stroke-width=\"1.5\"/></pattern></defs>\n";
  for (size_t yi = 0; yi < ny; ++yi) {
    for (size_t xi = 0; xi < nx; ++xi) {
      const int x = left + static_cast<int>(xi) * cell, y = top + static_cast<int>(yi) * cell;
      std::string title;
      if (!x_name.empty()) title += x_name + "=" + x_values[xi];
      if (!y_name.empty()) title += ", " + y_name + "=" + y_values[yi];
      std::string fill = kNotRunColour, cls_attr = "none", distinct_attr;
      const auto it = cells.find({xi, yi});
      if (it == cells.end()) {
        title += (title.empty() ? "" : ": ") + std::string("not run");
      } else {
        std::set<std::pair<size_t, int>> seen;
        for (const Point* p : it->second) seen.insert({p->group, p->cls});
        if (seen.size() == 1) {
          const Point& p = *it->second.front();
          fill = fill_of(p);
          cls_attr = std::to_string(p.cls);
          distinct_attr = std::to_string(groups[p.group].classes.size());
          title += std::string(title.empty() ? "" : ": ") + class_text(p) + " (" +
                   groups[p.group].classes[p.cls].hex().substr(0, 12) + ")";
        } else {
          fill = "url(#mixed-" + id_fragment(b.name) + ")";
          cls_attr = "mixed";
          title += std::string(title.empty() ? "" : ": ") + "mixed:";
        }
        if (seen.size() > 1 || it->second.size() > 1) {
          for (const Point* p : it->second) {
            title.append("\n")
                .append(context_label(r, p->c->context_index, context_of(r, *p->c).id))
                .append(" -> ");
            title.append(class_text(*p));
          }
        }
      }
      o << "<rect class=\"cell\" data-class=\"" << cls_attr << "\"";
      if (!distinct_attr.empty()) o << " data-group-distinct=\"" << distinct_attr << "\"";
      o << " x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell - 1 << "\" height=\"" << cell - 1
        << "\" fill=\"" << esc(fill) << "\"><title>" << esc(title) << "</title></rect>\n";
    }
  }
  // Axis labels: y on the left, x rotated under the columns (thinned out when columns are narrow).
  for (size_t yi = 0; yi < ny && !y_name.empty(); ++yi) {
    o << "<text x=\"" << left - 4 << "\" y=\"" << top + static_cast<int>(yi) * cell + cell / 2 + 4
      << "\" font-size=\"11\" text-anchor=\"end\">" << esc(y_values[yi].substr(0, 24))
      << "</text>\n";
  }
  for (size_t xi = 0; xi < nx && !x_name.empty(); xi += x_label_step) {
    const int x = left + static_cast<int>(xi) * cell + cell / 2 + 4;
    const int y = top + static_cast<int>(ny) * cell + 4;
    o << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"11\" text-anchor=\"end\" "
      << "transform=\"rotate(-90 " << x << " " << y << ")\">" << esc(x_values[xi].substr(0, 16))
      << "</text>\n";
  }
  o << "</svg>\n";
  o << "<p class=\"muted\">" << (x_name.empty() ? "One context." : "Columns: " + esc(x_name) + ".");
  if (!y_name.empty()) o << " Rows: " << esc(y_name) << ".";
  if (axes.size() > 2) {
    o << " Other varying axes are folded into each cell; a hatched cell holds contexts with "
         "different results (hover for the list).";
  }
  o << "</p>\n";
  o << "<div class=\"legend\"><span><i style=\"background:" << kSameColour
    << "\"></i>same bits as its group's baseline</span>";
  if (few) {
    for (size_t c = 1; c < most; ++c) {
      o << "<span><i style=\"background:" << kClassColours[c - 1] << "\"></i>result #" << c + 1
        << " of its group</span>";
    }
  } else {
    for (size_t d = 2; d <= kCountShadeCount + 1; ++d) {
      o << "<span><i style=\"background:" << count_shade(d) << "\"></i>differs; group has " << d
        << (d == kCountShadeCount + 1 ? "+" : "") << " results</span>";
    }
  }
  if (axes.size() > 2) {
    o << "<span><i style=\"background:repeating-linear-gradient(45deg,#fff 0 3px,#333 3px "
         "4px)\"></i>mixed</span>";
  }
  o << "<span><i style=\"background:" << kNotRunColour << "\"></i>not run</span></div>\n";
  write_group_table(o, r, groups);
  o << "</div>\n";
}

void write_heatmaps(std::ostringstream& o, const AuditResult& r) {
  o << "<section id=\"heatmaps\">\n<h2>Results over the sweep</h2>\n"
       "<p class=\"muted\">Each cell is one context. Its colour says whether the request's output "
       "has the same bits as in the baseline of its group (the first context with the same "
       "request-defining values, such as <code>kv_len</code>), and otherwise which of the "
       "group's results it is. Hover a cell for its context.</p>\n";
  for (const BackendOutcome& b : r.backends) {
    if (!b.skipped) write_heatmap(o, r, b);
  }
  o << "</section>\n";
}

// The notes that differ, folded when there are several so that the column stays narrow.
std::string folded_notes(const std::vector<std::string>& notes) {
  if (notes.empty()) return "none";
  if (notes.size() == 1) return esc(notes.front());
  std::string out = "<details><summary>" + std::to_string(notes.size()) + " notes</summary>";
  for (const std::string& n : notes) out += esc(n) + "<br>";
  return out + "</details>";
}

void write_divergences(std::ostringstream& o, const AuditResult& r) {
  o << "<section id=\"divergences\">\n<h2>Divergences</h2>\n";
  if (r.divergences.empty()) {
    o << "<p>No divergences: every request gave the same bits in every context.</p>\n</section>\n";
    return;
  }
  o << "<p><label>Backend <select id=\"divergence-filter\"><option value=\"\">all</option>";
  std::set<std::string> names;
  for (const Divergence& d : r.divergences) names.insert(d.backend);
  for (const std::string& n : names)
    o << "<option value=\"" << esc(n) << "\">" << esc(n) << "</option>";
  o << "</select></label></p>\n";
  // Ten columns, values over their bit patterns: the table fits a 1280-pixel window.
  o << "<table id=\"divergence-table\">\n<thead><tr><th>Backend</th><th>Request, token</th>"
       "<th>Baseline</th><th>Context</th><th>Element</th><th>a</th><th>b</th>"
       "<th>ULP, max |&Delta;|, max rel</th><th>Mismatching</th><th>Notes that differ</th></tr>"
       "</thead>\n<tbody>\n";
  for (size_t i = 0; i < r.divergences.size() && i < kMaxDivergenceRows; ++i) {
    const Divergence& d = r.divergences[i];
    const FirstMismatch& m = d.first_mismatch;
    const auto notes = notes_that_differ(d.baseline_notes, d.notes);
    std::string context = context_label(r, d.context_index, d.context);
    if (d.kind == DivergenceKind::kRunToRun) {
      context += " (run-to-run, repeat " + std::to_string(d.repeat) + ")";
    }
    o << "<tr data-backend=\"" << esc(d.backend) << "\" data-kind=\""
      << esc(divergence_kind_name(d.kind)) << "\"><td><code>" << esc(d.backend)
      << "</code></td><td class=\"num\">" << d.request << ", " << d.token
      << "</td><td class=\"wrap\">"
      << esc(context_label(r, d.baseline_context_index, d.baseline_context))
      << "</td><td class=\"wrap\">" << esc(context) << "</td><td>"
      << esc(named_coords(m.coords, r.scenario.coord_names)) << " <span class=\"muted\">(#"
      << m.flat_index << ")</span></td><td class=\"num\">" << esc(exact_number(m.a)) << "<br><code>"
      << esc(m.a_bits) << "</code></td><td class=\"num\">" << esc(exact_number(m.b)) << "<br><code>"
      << esc(m.b_bits) << "</code></td><td class=\"num\">" << esc(ulp_text(m.ulp)) << "<br>"
      << esc(short_number(d.max_abs_diff)) << "<br>" << esc(short_number(d.max_rel_diff))
      << "</td><td>" << esc(plural(d.mismatch_count, "element", "elements")) << ", "
      << d.mismatched_tokens << "/" << d.tokens << " tokens</td><td>" << folded_notes(notes)
      << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n";
  if (r.divergences.size() > kMaxDivergenceRows) {
    o << "<p class=\"muted\">" << r.divergences.size() - kMaxDivergenceRows
      << " more divergences are in the JSON report.</p>\n";
  }
  o << "</section>\n";
}

constexpr size_t kMaxVerifyRows = 200;

// With --verify: the manifest check, part of the verdict in the title.
void write_verify(std::ostringstream& o, const AuditResult& r) {
  if (!r.verify) return;
  const VerifyResult& v = *r.verify;
  o << "<section id=\"verify\">\n<h2>Manifest <code>" << esc(v.manifest) << "</code>: "
    << (v.passed ? "<span class=\"ok\">verified</span>" : "<span class=\"bad\">FAILED</span>")
    << "</h2>\n<p>" << esc(v.verdict) << ".</p>\n";
  if (v.environment.empty()) {
    o << "<p class=\"muted\">Environment unchanged since the recording.</p>\n";
  } else {
    o << "<ul>\n";
    for (const std::string& e : v.environment) o << "<li>" << esc(e) << "</li>\n";
    o << "</ul>\n";
  }
  if (!v.changes.empty()) {
    o << "<table "
         "id=\"verify-table\">\n<thead><tr><th>Backend</th><th>Expectation</th><th>Context</th>"
         "<th>Repeat</th><th>Request</th><th>First changed token</th><th>Recorded</th><th>Now</th>"
         "<th>Fails</th></tr></thead>\n<tbody>\n";
    for (size_t i = 0; i < v.changes.size() && i < kMaxVerifyRows; ++i) {
      const ManifestChange& c = v.changes[i];
      const auto [recorded, now] = short_hashes(c.recorded, c.now);
      o << "<tr><td><code>" << esc(c.backend) << "</code></td><td>"
        << esc(c.expectation.empty() ? "not run now" : c.expectation) << "</td><td>"
        << esc(context_label(r, c.context_index, c.context)) << "</td><td class=\"num\">"
        << c.repeat << "</td><td class=\"num\">" << c.request << "</td><td class=\"num\">"
        << (c.first_token >= 0 ? std::to_string(c.first_token) : std::string("n/a"))
        << "</td><td><code>" << recorded << "</code></td><td><code>" << now << "</code></td><td>"
        << (c.fails ? "<span class=\"bad\">yes</span>" : "no") << "</td></tr>\n";
    }
    o << "</tbody>\n</table>\n";
    if (v.changes.size() > kMaxVerifyRows) {
      o << "<p class=\"muted\">" << v.changes.size() - kMaxVerifyRows
        << " more changes are in the JSON report.</p>\n";
    }
  }
  if (!v.missing.empty() || !v.added.empty()) {
    o << "<p>"
      << esc(plural(static_cast<int64_t>(v.missing.size()), "recorded entry", "recorded entries"))
      << " not run, "
      << esc(plural(static_cast<int64_t>(v.added.size()), "new entry", "new entries"))
      << " (listed in the JSON report).</p>\n";
  }
  o << "</section>\n";
}

void write_bisect(std::ostringstream& o) {
  // The audit result carries no bisection; this section only points to the command that makes one.
  o << "<section id=\"bisect\">\n<h2>Bisect</h2>\n<p class=\"muted\">This audit ran no bisection. "
       "<code>nvdet bisect SCENARIO --request R --context KEY=V</code> finds the first token, "
       "layer and op that diverge.</p>\n</section>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html_report(const AuditResult& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       // Nothing may be fetched: the report must open the same offline and in a CI artifact viewer.
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>nvdet "
    << command_name(r) << " " << esc(r.scenario.name) << ": "
    << (ran_nothing(r)     ? "NOTHING RAN"
        : r.summary.passed ? "PASS"
                           : "FAIL")
    << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  write_summary(o, r);
  write_verify(o, r);
  write_backends(o, r);
  write_throughput(o, r);
  write_token_level(o, r);
  write_traffic(o, r);
  o << parity_html_section(r);
  o << probe_html_section(r);
  write_heatmaps(o, r);
  if (!r.probe) write_divergences(o, r);  // a probe's are in its own section, in its terms
  write_bisect(o);
  o << "<script>" << kScript << "</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace nvdet
