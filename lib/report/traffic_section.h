#pragma once
// What every report format states about a serving-traffic scenario (README "Serving traffic"),
// read from the result model only: per backend and probed request, how many distinct
// completions its replays gave and how many replays gave each (the histogram); and where the
// first replay that parted from the baseline parted: the probe's step, what shared that step on
// each side (decode and prefill rows, from which requests: the row count every GEMM of the step
// saw) and the plans of the step's calls that changed. Console lines and JUnit properties are
// made here; the Markdown and HTML writers render the two tables with their own escaping.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

// How many of a backend's replays of one probed request (in one group of contexts) gave each of
// its distinct completions, most frequent first: the histogram.
struct ReplayCounts {
  std::string group;
  int64_t request = 0;
  int replays = 0;
  std::vector<int> counts;
};
std::vector<ReplayCounts> replay_counts(const AuditResult& r, const std::string& backend);

struct TrafficTable {
  std::vector<std::string> heads;
  std::vector<std::vector<std::string>> rows;
};

struct TrafficReport {
  std::string summary;    // the traffic in one line (ScenarioSummary::traffic)
  TrafficTable replays;   // one row per backend and probed request
  TrafficTable partings;  // one row per backend whose replays parted
};

// nullopt for a scenario without traffic.
std::optional<TrafficReport> traffic_report(const AuditResult& r);

// Console: the lines under a backend's verdict ("       replays: request 0: ...").
std::string traffic_console_lines(const AuditResult& r, const BackendOutcome& b);

// JUnit: the same as the backend suite's properties (traffic_replays, traffic_parted_at,
// traffic_baseline_step, traffic_step, traffic_plans_changed).
void add_traffic_properties(const AuditResult& r, const BackendOutcome& b,
                            std::vector<std::pair<std::string, std::string>>& properties);

}  // namespace nvdet
