// A model context's batch: probed prompts at their position, the scenario's other prompts next,
// then seeded fillers; a probed prompt's ids never depend on the context.
#include <gtest/gtest.h>

#include "lib/loader/scenario_loader.h"
#include "lib/model/prompts.h"
#include "lib/scenario/context.h"

namespace nvdet {
namespace {

Scenario scenario() {
  return parse_scenario(R"(name: prompts
op: model
dtype: bf16
model:
  vocab: 1000
  prompts: [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
seed: 3
requests: [1]
sweep:
  batch: [1, 5]
  position: [first, last]
backends:
  cpu-invariant: invariant
)",
                        "prompts.yaml");
}

TEST(ModelPrompts, BatchComposition) {
  const Scenario s = scenario();
  const std::vector<Prompt> prompts = scenario_prompts(s, 1000);
  const std::vector<Context> contexts = expand_contexts(s);
  ASSERT_EQ(contexts.size(), 4u);
  const ModelBatch alone = make_model_batch(s, contexts[0], prompts, 1000);
  ASSERT_EQ(alone.prompts.size(), 1u);
  EXPECT_EQ(alone.prompts[0], (Prompt{4, 5}));
  const ModelBatch last = make_model_batch(s, contexts[3], prompts, 1000);  // batch 5, last
  ASSERT_EQ(last.prompts.size(), 5u);
  EXPECT_EQ(last.probe_slot, (std::vector<size_t>{4}));
  EXPECT_EQ(last.prompts[4], (Prompt{4, 5}));
  EXPECT_EQ(last.prompts[0], (Prompt{1, 2, 3}));  // the other prompts first
  EXPECT_EQ(last.prompts[1], (Prompt{6, 7, 8, 9}));
  EXPECT_EQ(last.prompts[2].size(), prompts[2].size());  // then fillers, as long as prompt slot%3
  EXPECT_EQ(last.prompts[3].size(), prompts[0].size());
  EXPECT_NE(last.prompts[2], last.prompts[3]);
  for (int32_t id : last.prompts[2]) EXPECT_LT(id, 1000);
  // Deterministic: the same context gives the same fillers.
  EXPECT_EQ(make_model_batch(s, contexts[3], prompts, 1000).prompts, last.prompts);
}

TEST(ModelPrompts, SyntheticPromptsAreSeeded) {
  const Prompt a = synthetic_prompt(7, 0, 32, 50);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a, synthetic_prompt(7, 0, 32, 50));
  EXPECT_NE(a, synthetic_prompt(8, 0, 32, 50));
  EXPECT_NE(a, synthetic_prompt(7, 1, 32, 50));
  int distinct = 0;
  for (int32_t v = 0; v < 50; ++v) distinct += std::count(a.begin(), a.end(), v) > 0;
  EXPECT_GT(distinct, 10);
}

}  // namespace
}  // namespace nvdet
