#pragma once
// `nvdet audit --last-failed REPORT.json...`: what to run again after a failed audit, read from
// its JSON reports, as pytest's --lf does: the contexts where a failed backend diverged (each
// rerun with its group's baseline), a whole scenario whose failure no context shows (a `variant`
// backend that never diverged), nothing of a scenario that passed. When no report failed,
// everything runs.
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nvdet {

struct LastFailed {
  enum class Rerun { kContexts, kWhole, kNone };
  struct Scenario {
    Rerun rerun = Rerun::kWhole;
    std::set<std::string> contexts;  // kContexts: the failed contexts' ids
    std::string report;              // the report it came from, for messages
  };
  std::map<std::string, Scenario> scenarios;  // by scenario name; absent: run it whole
  bool any_failed = false;
};

// Reads the reports (as `nvdet report` does: bounded, checked; shard reports of one scenario are
// merged first). Throws Error(kBadInput) for a report that cannot be read.
LastFailed read_last_failed(const std::vector<std::string>& paths);

}  // namespace nvdet
