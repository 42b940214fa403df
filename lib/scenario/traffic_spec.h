#pragma once
// The traffic block of a model scenario (`traffic:`, README "Serving traffic"): the co-traffic
// that the probed requests are replayed under, drawn from the axis `traffic_seed`, and the
// settings of the scheduler that fills each step (the defaults of the axes
// max_num_batched_tokens, max_num_seqs, prefix_caching and chunked_prefill). The generator
// (lib/model/traffic_requests.h) and the scheduler (lib/model/traffic_scheduler.h) read it.
#include <cstdint>
#include <string>
#include <vector>

namespace nvdet {

// An integer drawn uniformly from [min, max]; min == max is a fixed value.
struct UniformRange {
  int32_t min = 16, max = 16;
};

enum class EosRule {
  kOff,         // every request decodes its max_new_tokens
  kTokens,      // the ids in eos_tokens end a request (the token is its last)
  kCheckpoint,  // the checkpoint's eos_token_id does (resolved when the model is read)
};

struct TrafficSpec {
  bool enabled = false;  // the scenario has a traffic block
  int32_t requests = 0;  // co-traffic requests per replay, besides the probed ones
  // Arrival steps: a Poisson process of `rate` requests per step, or, with burst_size > 0,
  // burst_size requests together every burst_every steps (the first burst at step 0).
  double rate = 1.0;
  int32_t burst_size = 0, burst_every = 1;
  UniformRange prompt_len;      // co-traffic prompt tokens, after any shared prefix
  UniformRange max_new_tokens;  // co-traffic tokens to generate
  // prompts_file: co-traffic prompts are drawn (uniformly) from these instead of seeded tokens.
  std::string prompts_file;
  std::vector<std::vector<int32_t>> prompts;
  EosRule eos = EosRule::kOff;
  std::vector<int32_t> eos_tokens;
  // Shared prefixes: prefix_groups prefixes of prefix_len seeded tokens, the same in every
  // replay; a co-traffic request starts with one of them (uniformly) with probability
  // prefix_fraction. probe_prefix >= 0: every probed prompt starts with that group's prefix.
  int32_t prefix_groups = 0, prefix_len = 0;
  double prefix_fraction = 0.0;
  int32_t probe_prefix = -1;
  int32_t probe_arrival = 0;  // the step the probed requests arrive at
  // The scheduler's settings and the replay's seed: the defaults of their axes.
  int64_t max_num_batched_tokens = 512;
  int64_t max_num_seqs = 64;
  bool prefix_caching = true;
  bool chunked_prefill = true;
  int64_t seed = 1;
};

// The traffic in one line, for the reports: "40 requests arriving at 0.5 a step, prompts of
// 8..48 tokens (30% after one of 2 shared 32-token prefixes), 4..32 new tokens, EOS off".
std::string traffic_summary(const TrafficSpec& t);

}  // namespace nvdet
