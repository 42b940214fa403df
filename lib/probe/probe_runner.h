#pragma once
// nvdet probe: the audit of a running OpenAI-compatible server. One way, as the audit's:
// scenario (op probe) -> contexts -> requests -> hashes -> comparisons -> the audit's result
// model, which the audit's writers, merge and exit codes take as they are.
//
// The contexts are the probe's control first -- each probed prompt alone, `control` times, nothing
// else in flight -- then every point of the sweep (concurrency, arrival, filler_words,
// filler_max_tokens), each `repeat` times. In a loaded context each probed prompt is sent among
// `concurrency` seeded fillers (streams, so that their progress is seen): first (before them),
// mid (once they have streamed half their tokens) or last (once each has streamed its first).
// Every run of a prompt is compared with its first run alone, bit for bit at the finest level
// the server returns (lib/probe/served_output.h); a completion that some run alone also gave is
// marked as such, so that the control's nondeterminism is never blamed on the load.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/runner/audit.h"
#include "lib/runner/audit_result.h"
#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

struct ProbeOptions {
  std::string url;             // --url: the server's base URL instead of the endpoint's
  std::string context_filter;  // --filter REGEX
  bool filter_spans_scenarios = false;
  std::optional<ShardInfo> shard;                         // --shard: the contexts are a shard's
  std::function<void(const AuditProgress&)> on_progress;  // at the start and end of each case
};

// Every context of a probe scenario before any filter: its control (concurrency=0) with index
// 0, then the sweep's points, among which the concurrency axis always is (its scenario value
// when the sweep does not name it).
std::vector<Context> probe_contexts(const Scenario& s);

// What can be checked before a request is sent: the scenario is a probe, the URL (--url) is one
// nvdet may send to, the headers' environment variables are set, the budget holds, the filter
// matches. Returns the contexts to run (the control always among them).
std::vector<Context> check_probe(Scenario& s, const ProbeOptions& options);

// Runs `contexts` (check_probe's) against the server. Throws Error(kRuntime) with one sentence
// when a request fails: no connection, an HTTP error, malformed JSON, an oversized answer, a
// deadline or inactivity timeout.
AuditResult run_probe(const Scenario& s, const ProbeOptions& options,
                      const std::vector<Context>& contexts);

}  // namespace nvdet
