#pragma once
// Turns what a backend did into pass/fail under its expectation, and one sentence saying why.
#include <optional>
#include <string_view>

#include "lib/runner/audit_result.h"

namespace nvdet {

// `partial`: the contexts are one shard of the sweep. A divergence there is one of the whole sweep,
// but no divergence in a shard does not fail a `variant` expectation: the merge decides that.
void decide_verdict(BackendOutcome& outcome, const std::optional<Divergence>& first,
                    bool partial = false);

// "step 3, layer 0, op down"; an op outside the layers (embed, final_norm, logits: layer -1 in
// traces) has no layer to name: "step 0, op embed".
std::string describe_op_location(int32_t step, int32_t layer, std::string_view op);

// "request 0, token 0, element (token=0, col=17): 1.25 vs 1.2509766 (bits 0x3fa0 vs 0x3fa1, 1 ulp)"
std::string describe_first_mismatch(const Divergence& d,
                                    const std::vector<std::string>& coord_names);

}  // namespace nvdet
