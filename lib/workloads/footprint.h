#pragma once
// What one context of a scenario holds at its peak, in bytes, estimated from the scenario alone
// (before any context is expanded or tensor allocated): the budget check (lib/runner/budget.h)
// refuses scenarios that cannot fit. Each op's workload file gives its own estimate (OpSpec::
// footprint), since the workload is what allocates. An upper bound with every axis at its largest.
#include <string_view>

#include "lib/scenario/scenario.h"

namespace nvdet {

struct Footprint {
  double inputs = 0, weights = 0, kv = 0, outputs = 0, workspace = 0;
  // What the CPU backends allocate on top, at their peak: the fp32 copies of inputs and weights
  // they compute from, and cpu-reference's double accumulators. Host memory only, and only when a
  // CPU backend runs.
  double cpu_copies = 0;
  // Not bytes: what one context computes, for model scenarios (0 for the single ops). Tokens
  // prefilled and generated per sequence, times sequences, times layers; and the (query, key)
  // pairs attention visits, times layers (quadratic in the sequence length).
  double token_layers = 0, attention_pair_layers = 0;
  double total() const { return inputs + weights + kv + outputs + workspace; }
};

// The largest integer an axis takes, or `fallback` when the scenario does not sweep it (or sweeps
// it only with words such as 'whole' or 'same').
double axis_max(const Scenario& s, Axis axis, double fallback);
// The largest batch; without a batch axis the batch is exactly the probed requests.
double batch_max(const Scenario& s);
double dtype_bytes(DType t);

// The per-op estimates (one beside each workload factory).
Footprint gemm_footprint(const Scenario& s);
Footprint rmsnorm_footprint(const Scenario& s);
Footprint log_softmax_footprint(const Scenario& s);
Footprint attention_decode_footprint(const Scenario& s);
Footprint attention_prefill_footprint(const Scenario& s);
Footprint moe_footprint(const Scenario& s);
// Reads a checkpoint's config.json when the scenario names one (throws kBadInput when it is bad).
Footprint model_footprint(const Scenario& s);
// op probe: the prompts held and every response in flight at its size limit (lib/probe/).
Footprint probe_footprint(const Scenario& s);

}  // namespace nvdet
