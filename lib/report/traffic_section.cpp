#include "lib/report/traffic_section.h"

#include <absl/strings/str_join.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "lib/report/report_text.h"
#include "lib/runner/traffic_steps_text.h"

namespace nvdet {

std::vector<ReplayCounts> replay_counts(const AuditResult& r, const std::string& backend) {
  std::map<std::pair<std::string, int64_t>, std::map<std::vector<int32_t>, int>> seen;
  for (const CaseRecord& c : r.cases) {
    if (c.backend != backend || c.repeat != 0) continue;
    for (const RequestRecord& q : c.requests)
      ++seen[{context_of(r, c).group, q.request}][q.completion];
  }
  std::vector<ReplayCounts> out;
  for (const auto& [key, completions] : seen) {
    ReplayCounts rc{key.first, key.second, 0, {}};
    for (const auto& [completion, n] : completions) {
      rc.counts.push_back(n);
      rc.replays += n;
    }
    std::sort(rc.counts.rbegin(), rc.counts.rend());
    out.push_back(std::move(rc));
  }
  return out;
}

namespace {

std::string replays_text(const ReplayCounts& c) {
  return fmt::format("{} distinct completion{} over {} replays ({})", c.counts.size(),
                     c.counts.size() == 1 ? "" : "s", c.replays, absl::StrJoin(c.counts, ", "));
}

// The divergence whose parting a backend's reports describe: the first whose tokens differ
// (it explains a second completion), else the first whose bits do.
const Divergence* parting_of(const AuditResult& r, const std::string& backend) {
  const Divergence* first = nullptr;
  for (const Divergence& d : r.divergences) {
    if (d.backend != backend || !d.traffic || d.kind != DivergenceKind::kContext) continue;
    if (d.completion) return &d;
    if (!first) first = &d;
  }
  return first;
}

std::string plan_changes(const ProbeStep& baseline, const ProbeStep& here) {
  return absl::StrJoin(report_text::notes_that_differ(step_plan(baseline), step_plan(here)), "; ");
}

struct Parting {
  std::string where, baseline, here, plans;
};

std::optional<Parting> parting(const AuditResult& r, const BackendOutcome& b) {
  const Divergence* d = parting_of(r, b.name);
  if (!d) return std::nullopt;
  const TrafficParting& t = *d->traffic;
  Parting p;
  p.where = fmt::format(
      "request {} in {} from its step {}{}", d->request,
      report_text::context_label(r, d->context_index, d->context), t.step,
      d->first_op ? fmt::format(" (layer {}, op {})", d->first_op->layer, d->first_op->op) : "");
  p.baseline = fmt::format(
      "{}: {}", report_text::context_label(r, d->baseline_context_index, d->baseline_context),
      probe_step_text(t.baseline));
  p.here = probe_step_text(t.here);
  p.plans = plan_changes(t.baseline, t.here);
  return p;
}

}  // namespace

std::optional<TrafficReport> traffic_report(const AuditResult& r) {
  if (r.scenario.traffic.empty()) return std::nullopt;
  TrafficReport t;
  t.summary = r.scenario.traffic;
  t.replays.heads = {"Backend", "Request", "Replays", "Distinct completions",
                     "Replays per completion"};
  t.partings.heads = {"Backend", "First replay apart", "The baseline's step", "That replay's step",
                      "Plans that changed there"};
  for (const BackendOutcome& b : r.backends) {
    if (b.skipped) continue;
    for (const ReplayCounts& c : replay_counts(r, b.name)) {
      t.replays.rows.push_back({b.name, std::to_string(c.request), std::to_string(c.replays),
                                std::to_string(c.counts.size()), absl::StrJoin(c.counts, ", ")});
    }
    if (const auto p = parting(r, b)) {
      t.partings.rows.push_back(
          {b.name, p->where, p->baseline, p->here, p->plans.empty() ? "-" : p->plans});
    }
  }
  return t;
}

std::string traffic_console_lines(const AuditResult& r, const BackendOutcome& b) {
  if (r.scenario.traffic.empty() || b.skipped) return "";
  std::string s;
  for (const ReplayCounts& c : replay_counts(r, b.name))
    s += fmt::format("       replays: request {}: {}\n", c.request, replays_text(c));
  if (const auto p = parting(r, b)) {
    s += "       first replay apart: " + p->where + "\n";
    s += "       the baseline's step, " + p->baseline + "\n";
    s += "       that replay's step, " + p->here + "\n";
    if (!p->plans.empty()) s += "       plans that changed there: " + p->plans + "\n";
  }
  return s;
}

void add_traffic_properties(const AuditResult& r, const BackendOutcome& b,
                            std::vector<std::pair<std::string, std::string>>& properties) {
  if (r.scenario.traffic.empty() || b.skipped) return;
  std::vector<std::string> replays;
  for (const ReplayCounts& c : replay_counts(r, b.name))
    replays.push_back(fmt::format("request {}: {}", c.request, replays_text(c)));
  properties.emplace_back("traffic_replays", absl::StrJoin(replays, "; "));
  if (const auto p = parting(r, b)) {
    properties.emplace_back("traffic_parted_at", p->where);
    properties.emplace_back("traffic_baseline_step", p->baseline);
    properties.emplace_back("traffic_step", p->here);
    properties.emplace_back("traffic_plans_changed", p->plans.empty() ? "-" : p->plans);
  }
}

}  // namespace nvdet
