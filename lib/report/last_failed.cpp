#include "lib/report/last_failed.h"

#include "lib/report/json_report_reader.h"
#include "lib/report/merge_reports.h"

namespace nvdet {

LastFailed read_last_failed(const std::vector<std::string>& paths) {
  std::vector<AuditResult> results;
  std::map<std::string, std::string> path_of;
  for (const std::string& p : paths) {
    results.push_back(read_audit_report(p));
    path_of.emplace(results.back().scenario.name, p);
  }
  LastFailed lf;
  for (const AuditResult& r : merge_shard_results(std::move(results))) {
    LastFailed::Scenario& s = lf.scenarios[r.scenario.name];
    s.report = path_of.at(r.scenario.name);
    if (r.summary.passed) {
      s.rerun = LastFailed::Rerun::kNone;
      continue;
    }
    lf.any_failed = true;
    s.rerun = LastFailed::Rerun::kContexts;
    for (const BackendOutcome& b : r.backends) {
      if (b.skipped || b.passed) continue;
      bool shown = false;
      for (const Divergence& d : r.divergences) {
        if (d.backend != b.name) continue;
        s.contexts.insert(d.context);
        shown = true;
      }
      if (!shown) s.rerun = LastFailed::Rerun::kWhole;
    }
    if (r.verify) {
      for (const ManifestChange& c : r.verify->changes) {
        if (c.fails) s.contexts.insert(c.context);
      }
      // A manifest that failed for missing or new entries names no context that would fix it.
      if (!r.verify->passed && s.contexts.empty()) s.rerun = LastFailed::Rerun::kWhole;
    }
    if (s.contexts.empty()) s.rerun = LastFailed::Rerun::kWhole;
  }
  return lf;
}

}  // namespace nvdet
