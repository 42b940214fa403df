#pragma once
// The requests of a serving replay (README "Serving traffic"): the scenario's probed requests and
// the co-traffic drawn from the traffic block and the context's traffic_seed. What is fixed by
// the scenario is built once (the shared prefixes, the probed prompts, where each probe's trace
// starts); each replay draws the co-traffic's arrival steps, prompts and lengths from its seed
// alone, so the probe is the same request in every replay and only its company changes.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lib/model/prompts.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

struct TrafficRequest {
  std::string label;    // "probe 0" (by the probed request's id) or "r12" (co-traffic request 12)
  int64_t probe = -1;   // index into the scenario's requests; -1 for co-traffic
  int64_t arrival = 0;  // the step it arrives at
  std::vector<int32_t> prompt;
  int32_t max_new_tokens = 1;
  // The most prompt tokens it may take from the prefix cache; a probe's is its trace_from.
  int32_t max_cached_tokens = std::numeric_limits<int32_t>::max();
  // A probe: the first prompt position its trace holds (TrafficSource::trace_from).
  int32_t trace_from = 0;
};

class TrafficSource {
 public:
  // `prompts`: the scenario's prompts (the probed requests index them); vocab bounds the seeded
  // tokens. Throws Error(kBadInput) for a prompts-file token outside the vocabulary.
  TrafficSource(const Scenario& s, const std::vector<Prompt>& prompts, int32_t vocab);

  // One replay's requests in waiting-queue order: by arrival step, the probed requests after the
  // co-traffic that arrives at their step, in the order the scenario lists them.
  std::vector<TrafficRequest> requests(int64_t traffic_seed, int32_t probe_max_new_tokens) const;

  // Probe i's prompt (the shared prefix of traffic.probe_prefix first, when set).
  const std::vector<int32_t>& probe_prompt(size_t i) const { return probe_prompts_.at(i); }
  // The first prompt position traced for probe i: no replay can serve a position past it from
  // the prefix cache (its longest common prefix with any prompt the traffic can hold, in whole
  // pages of any page size of the sweep), so every replay computes the rows traced.
  int32_t trace_from(size_t i) const { return trace_from_.at(i); }
  // The most tokens any request of any replay holds (prompt and generated), for sizing the pool.
  int32_t longest_request(int32_t probe_max_new_tokens) const;

 private:
  TrafficSpec t_;
  uint64_t seed_;
  int32_t vocab_;
  std::vector<std::vector<int32_t>> prefixes_;  // the shared prefixes, by group
  std::vector<std::vector<int32_t>> probe_prompts_;
  std::vector<int64_t> probe_ids_;
  std::vector<int32_t> trace_from_;
};

}  // namespace nvdet
