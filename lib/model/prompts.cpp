#include "lib/model/prompts.h"

#include <set>

#include "lib/core/seeded_random.h"
#include "lib/workloads/batch_layout.h"

namespace nvdet {
namespace {

const auto mix = splitmix64;

// Prompt streams, apart from every other kind of seeded data.
constexpr uint64_t kPromptStream = uint64_t{5} << 52;

}  // namespace

Prompt synthetic_prompt(uint64_t seed, uint64_t stream, int32_t length, int32_t vocab) {
  Prompt p;
  const uint64_t key = mix(seed ^ mix(kPromptStream + stream));
  for (int32_t i = 0; i < length; ++i) {
    p.push_back(
        static_cast<int32_t>(mix(key + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab)));
  }
  return p;
}

std::vector<Prompt> scenario_prompts(const Scenario& s, int32_t vocab) {
  if (!s.model.prompts.empty()) return s.model.prompts;
  std::vector<Prompt> out;
  for (int32_t i = 0; i < s.model.num_prompts; ++i) {
    out.push_back(synthetic_prompt(s.seed, request_stream(i), s.model.prompt_len, vocab));
  }
  return out;
}

ModelBatch make_model_batch(const Scenario& s, const Context& c, const std::vector<Prompt>& prompts,
                            int32_t vocab) {
  const BatchLayout layout = make_batch_layout(s, c);
  const std::set<int64_t> probed(s.requests.begin(), s.requests.end());
  std::vector<size_t> others;  // the scenario's prompts nobody probes, in id order
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!probed.count(static_cast<int64_t>(i))) others.push_back(i);
  }
  ModelBatch b;
  size_t next_other = 0;
  for (size_t slot = 0; slot < layout.slots.size(); ++slot) {
    const BatchSlot& bs = layout.slots[slot];
    if (bs.probed) {
      b.prompts.push_back(prompts.at(static_cast<size_t>(bs.request)));
      b.request_ids.push_back(static_cast<uint64_t>(bs.request));
    } else if (next_other < others.size()) {
      b.request_ids.push_back(others[next_other]);
      b.prompts.push_back(prompts[others[next_other++]]);
    } else {
      b.request_ids.push_back(kFillerIdBase + slot);
      // A seeded filler as long as a scenario prompt (cycling through them), so the fillers'
      // lengths look like the workload's.
      const int32_t len = static_cast<int32_t>(prompts[slot % prompts.size()].size());
      b.prompts.push_back(
          synthetic_prompt(s.seed, filler_stream(static_cast<int64_t>(slot)), len, vocab));
    }
  }
  for (int64_t ps : layout.probe_slot) b.probe_slot.push_back(static_cast<size_t>(ps));
  return b;
}

}  // namespace nvdet
