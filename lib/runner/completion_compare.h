#pragma once
// For model scenarios: where two runs' completions part, and which intermediate tensor parted
// first. The output tensor of a model request is its logits, one row per decode step.
#include <optional>

#include "lib/runner/audit_result.h"
#include "lib/workloads/workload.h"

namespace nvdet {

std::optional<CompletionDivergence> compare_completions(const RequestOutput& reference,
                                                        const RequestOutput& output);
// Fills the two probabilities of a sampled divergence from the baseline's logits row at its step.
void add_sampling_probabilities(CompletionDivergence& d, const RequestOutput& reference,
                                const SamplingSpec& spec);

std::optional<OpDivergence> first_trace_difference(const RequestOutput& reference,
                                                   const RequestOutput& output);

// Under serving traffic: what shared the probe's step where the two runs parted (the first op's
// step, else the first token flip's); nullopt without traffic steps on both sides.
std::optional<TrafficParting> traffic_parting(const RequestOutput& reference,
                                              const RequestOutput& output,
                                              const std::optional<OpDivergence>& first_op,
                                              const std::optional<CompletionDivergence>& flip);

}  // namespace nvdet
