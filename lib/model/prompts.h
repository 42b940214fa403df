#pragma once
// The prompts of a model scenario and the batch each context decodes. The scenario's prompts are
// given inline, read from a file, or made synthetic (num_prompts seeded prompts of prompt_len
// ids). A context's batch holds the probed prompts at its `position` and fills every other slot
// with the scenario's other prompts in order, then with seeded filler prompts, so a probed
// prompt's tokens are the same in every context and only its neighbours change.
#include <cstdint>
#include <vector>

#include "lib/scenario/context.h"
#include "lib/scenario/scenario.h"

namespace nvdet {

using Prompt = std::vector<int32_t>;

// Seeded token ids in [0, vocab): a pure function of (seed, stream, length, vocab).
Prompt synthetic_prompt(uint64_t seed, uint64_t stream, int32_t length, int32_t vocab);

// The scenario's prompts (inline or from prompts_file as loaded, else synthetic).
std::vector<Prompt> scenario_prompts(const Scenario& s, int32_t vocab);

struct ModelBatch {
  std::vector<Prompt> prompts;     // one per slot
  std::vector<size_t> probe_slot;  // slot of each probed request, in scenario order
  // Per slot: the prompt's request id (its index among the scenario's prompts), or for a seeded
  // filler kFillerIdBase + slot: what a per-request sampler keys its draws by.
  std::vector<uint64_t> request_ids;
};
inline constexpr uint64_t kFillerIdBase = uint64_t{1} << 62;

// Throws kBadInput when the probed requests do not fit in the batch at that position.
ModelBatch make_model_batch(const Scenario& s, const Context& c, const std::vector<Prompt>& prompts,
                            int32_t vocab);

}  // namespace nvdet
