#pragma once
// nvdet probe's reading of its result (op probe, lib/probe/): which runs of each probed prompt
// gave which completion, whether the probe alone (the control) is deterministic, and how many
// runs under load gave a completion the probe never gave alone -- the load's doing, not a prompt
// cache's or a shared random generator's. Read from the result model only, so that the probe,
// the merge of its shards (lib/report/merge_reports.h) and every writer draw the same numbers.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/runner/audit_result.h"

namespace nvdet {

// Whether a context is a probe's control (the probe alone: concurrency 0).
bool is_probe_control(const Context& c);

// One distinct completion of a probed prompt: how often it came, alone and under load, and where
// first (sweep order: every context's first repeat, then the other repeats).
struct DistinctCompletion {
  Hash128 hash;
  int runs_alone = 0, runs_loaded = 0;
  int first_context_index = 0, first_repeat = 0;
  std::string text;  // the completion's text (the first run's)
};

struct ProbedPrompt {
  int64_t request = 0;
  std::vector<DistinctCompletion> distinct;  // first: the control's first run's
  int runs_alone = 0, runs_loaded = 0;
  int alone_distinct = 0;      // distinct completions among the runs alone
  int loaded_differing = 0;    // runs under load whose completion is not the first alone run's
  int loaded_never_alone = 0;  // ... nor any run alone's: the load's doing
};

struct ProbeAnalysis {
  std::vector<ProbedPrompt> prompts;  // by request id
  int runs_alone = 0, runs_loaded = 0, loaded_differing = 0, loaded_never_alone = 0;
  int most_alone_distinct = 0, most_distinct = 0;  // per prompt, at most
  int contexts_loaded = 0, contexts_differing = 0;
  bool control_deterministic() const { return most_alone_distinct <= 1; }
};

ProbeAnalysis analyze_probe(const AuditResult& r, const std::string& backend);

// The endpoint's counts and verdict under its expectation, from the result's cases:
//   invariant  every run gave the first alone run's completion, bit for bit;
//   variant    some run under load gave a completion no run alone gave;
//   report     recorded.
// A control that is not deterministic is said in the verdict, and its differences are never
// counted as the load's. `partial`: the cases are one shard's, which leaves a `variant`
// expectation that saw nothing to the merge.
void decide_probe_verdict(BackendOutcome& o, const AuditResult& r, bool partial);

}  // namespace nvdet
