#pragma once
// Shared by the serving-traffic replay tests (CPU: traffic_replay_test.cpp, GPU:
// gpu_traffic_test.cpp): a replay's requests drawn by the traffic generator from a small traffic
// block (seeded prompts, some after a shared prefix, arrivals a request a step, chunked prefill
// under a small budget), with one probed request of its own prompt arriving at step 2, and the
// scheduler settings that make steps mix decode rows and prompt chunks.
#include <cstdint>
#include <vector>

#include "lib/model/prompts.h"
#include "lib/model/traffic_replay.h"
#include "lib/model/traffic_requests.h"

namespace nvdet::testing {

// The scenario a replay's requests are drawn from: `requests` co-traffic requests, the probe's
// prompt (`probe_len` seeded tokens, after shared prefix 0 when `probe_prefix`), `max_new`
// tokens for the probe.
inline Scenario traffic_scenario(int32_t requests, int32_t probe_len, bool probe_prefix) {
  Scenario s;
  s.op = OpKind::kModel;
  s.seed = 3401;
  s.requests = {0};
  s.model.page_size = 8;
  s.model.prompt_len = probe_len;
  s.model.num_prompts = 1;
  TrafficSpec& t = s.traffic;
  t.enabled = true;
  t.requests = requests;
  t.rate = 1.0;
  t.prompt_len = {4, 30};
  t.max_new_tokens = {2, 10};
  t.prefix_groups = 2;
  t.prefix_len = 16;
  t.prefix_fraction = 0.5;
  t.probe_prefix = probe_prefix ? 0 : -1;
  t.probe_arrival = 2;
  return s;
}

inline std::vector<TrafficRequest> traffic_requests(const Scenario& s, int32_t vocab,
                                                    int64_t traffic_seed, int32_t max_new) {
  std::vector<Prompt> prompts = {synthetic_prompt(s.seed, 0, s.model.prompt_len, vocab)};
  return TrafficSource(s, prompts, vocab).requests(traffic_seed, max_new);
}

// A budget of 24 tokens a step and 6 requests at once: prompts arrive in chunks, beside decodes.
inline TrafficRunOptions traffic_options(DecodePath path) {
  TrafficRunOptions o;
  o.scheduler.max_num_batched_tokens = 24;
  o.scheduler.max_num_seqs = 6;
  o.page_size = 8;
  o.path = path;
  return o;
}

}  // namespace nvdet::testing
