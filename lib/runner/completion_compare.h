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

}  // namespace nvdet
